package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ManualClock;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The whole conformance suite against a real three-master Redis Cluster, plus keys across slots. */
class RedisClusterConformanceTest extends ConformanceSuite {

  static RedisStore store(String prefix, ManualClock clock) {
    AtomicLong last = new AtomicLong(Long.MIN_VALUE);
    return RedisStore.builder(TestCluster.connection()).prefix(prefix)
        .timeSourceMicros(() -> last.accumulateAndGet(Math.floorDiv(clock.nanoTime(), 1000), Math::max))
        .build();
  }

  @Override
  protected LimiterFactory factory() {
    return clusterFactory();
  }

  /** Limiters on the test cluster, each with its own prefix, time from the manual clock. */
  static LimiterFactory clusterFactory() {
    return new LimiterFactory() {
      @Override
      public RateLimiter create(ManualClock clock, List<Limit> limits) {
        return Sluice.builder().limits(limits.toArray(new Limit[0]))
            .store(store("c:" + UUID.randomUUID() + ":", clock)).clock(clock).scheduler(clock).build();
      }

      @Override
      public RateLimiter createGroup(ManualClock clock, dev.sluice.Group group) {
        return Sluice.builder().group(group).store(store("c:" + UUID.randomUUID() + ":", clock))
            .clock(clock).scheduler(clock).build();
      }

      @Override
      public long ticksPerSecond() {
        return 1_000_000L;
      }
    };
  }

  @Test
  void keysAcrossSlots_andSeveralLimitsOnOneKey_neverCrossSlot() {
    RedisStore store = store("x:", clock);
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(3, Rate.perSecond(1)))
        .limit(Limit.slidingWindow(5, Duration.ofSeconds(10))).store(store).build();
    Set<Integer> slots = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      String key = "tenant-" + i;
      slots.add(SlotHash.getSlot(store.stateKey(key)));
      assertThat(l.tryAcquire(key, 3).isAllowed()).isTrue();
      assertThat(l.tryAcquire(key).isAllowed()).isFalse();
      assertThat(l.stats().storeErrors()).isZero();
    }
    assertThat(slots.size()).as("the keys spread over many slots").isGreaterThan(250);
    assertThat(TestCluster.connection().getPartitions().size()).isEqualTo(3);
  }

  @Test
  void clusterBuilder_fromSeeds_works() {
    try (RedisStore store = RedisStore.clusterBuilder(TestCluster.seeds().get(0)).prefix("s:" + UUID.randomUUID())
        .commandTimeout(Duration.ofSeconds(2)).build()) {
      RateLimiter l = Sluice.builder().limit(Limit.gcra(Rate.perSecond(1), 2)).store(store).build();
      assertThat(l.tryAcquire("a").isAllowed()).isTrue();
      assertThat(l.tryAcquire("a").isAllowed()).isTrue();
      assertThat(l.tryAcquire("a").isAllowed()).isFalse();
      assertThat(l.tryAcquire("b").isAllowed()).isTrue();
    }
  }
}

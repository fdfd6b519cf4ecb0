package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.ManualClock;
import dev.sluice.testkit.ModelDecision;
import dev.sluice.testkit.ReferenceModel;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Lua computes in doubles: times and levels must stay in the exact integer range. These run
 * extreme rates and periods with the clock at today's epoch (1.8e15 µs) and check every decision
 * against the exact reference model.
 */
class RedisPrecisionTest {
  private static final long EPOCH_NANOS = 1_795_000_000_000_000_000L;   // late 2026, in ns

  private void agree(List<Limit> limits, long maxStepNanos, long seed) {
    ManualClock clock = new ManualClock(EPOCH_NANOS);
    RateLimiter store = Sluice.builder().limits(limits.toArray(new Limit[0]))
        .store(RedisFactory.store("p:" + UUID.randomUUID() + ":", clock)).build();
    ReferenceModel model = new ReferenceModel(limits, 1_000_000);
    Random r = new Random(seed);
    for (int i = 0; i < 400; i++) {
      clock.advanceNanos((long) (r.nextDouble() * maxStepNanos) / 1000 * 1000);
      double cost = 0.25 * (1 + r.nextInt(r.nextInt(10) == 0 ? 400 : 16));
      long now = clock.nanoTime();
      Decision d;
      ModelDecision expected;
      if (r.nextBoolean()) {
        d = store.tryAcquire("k", cost);
        expected = model.tryAcquire("k", cost, now);
      } else {
        d = store.fillUp("k", cost);
        expected = model.fillUp("k", cost, now);
      }
      assertThat(ModelDecision.of(d)).as("step %s, %s at %s", i, cost, now).isEqualTo(expected);
    }
  }

  @Test
  void slowestRates_yearsOfDrain_stayExact() {
    agree(List.of(Limit.leakyBucket(50, Rate.of(1, Duration.ofDays(365)))), Duration.ofDays(20).toNanos(), 1);
    agree(List.of(Limit.gcra(Rate.of(1000, Duration.ofDays(30)), 1000)), Duration.ofHours(6).toNanos(), 2);
  }

  @Test
  void fastestRates_microsecondUnits_stayExact() {
    // a quarter unit is exactly one microsecond: the finest rate at which quarter costs are exact
    agree(List.of(Limit.leakyBucket(1_000_000, Rate.perSecond(250_000))), 50_000, 3);
    agree(List.of(Limit.tokenBucket(2_000, Rate.perSecond(2_000))), 2_000_000, 4);
  }

  @Test
  void windowsAtTheEpoch_stayExact() {
    agree(List.of(Limit.slidingWindow(1_000_000, Duration.ofDays(30)),
        Limit.fixedWindow(9_000_000, Duration.ofDays(365))), Duration.ofDays(2).toNanos(), 5);
  }

  @Test
  void drainBeyondTheExactRange_isRefusedAtBuild() {
    Limit glacial = Limit.leakyBucket(100, Rate.of(1, Duration.ofDays(365)));   // 100 years
    assertThatThrownBy(() -> Sluice.builder().limit(glacial)
        .store(RedisFactory.store("p:", new ManualClock())).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("years to drain").hasMessageContaining("71 years");
  }
}

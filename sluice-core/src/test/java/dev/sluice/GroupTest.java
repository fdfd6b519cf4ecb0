package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Groups in core: validation with messages that name the values, how a group goes with the
 * builder's other settings, failure policies on a store, and the in-memory key bound under a
 * flood of keys and groups. The decisions themselves are the testkit's GroupSuite, on every store.
 */
class GroupTest {
  private static final long MS = 1_000_000;
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();
  private final Limit parent = Limit.leakyBucket(10, Rate.perSecond(10));
  private final Limit assured = Limit.leakyBucket(2, Rate.perSecond(1));

  private Group group() {
    return Group.sharing(parent).assured(assured).reserve(4)
        .by(key -> key.substring(0, key.indexOf('/')));
  }

  @Test
  void badLimits_areRefused_namingTheLimitAndTheRule() {
    assertThatThrownBy(() -> Group.sharing(Limit.fixedWindow(10, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("parent fixed-window(10 / 1s) is a fixed-window: the limits of a group must"
            + " be buckets (leaky-bucket, token-bucket or gcra), whose leak rate can be shared");
    assertThatThrownBy(() -> Group.sharing(parent.withPenalty(Duration.ofSeconds(1))))
        .hasMessageContaining("has a penalty: the limits of a group take none");
    assertThatThrownBy(() -> Group.sharing(parent).assured(Limit.leakyBucket(2, Rate.perSecond(11))))
        .hasMessageContaining("has a higher rate than the parent")
        .hasMessageContaining("one key alone would over-commit the group");
    assertThatThrownBy(() -> Group.sharing(parent).assured(Limit.leakyBucket(11, Rate.perSecond(1))))
        .hasMessageContaining("holds more than the parent").hasMessageContaining("(capacity 11 > 10)");
    assertThatThrownBy(() -> Group.sharing(parent).assured(assured)
        .ceiling(Limit.leakyBucket(1, Rate.perSecond(5))))
        .hasMessageContaining("is below the assured limit");
    assertThatThrownBy(() -> Group.sharing(parent).ceiling(Limit.leakyBucket(1, Rate.perSecond(5)))
        .assured(assured))
        .as("checked whichever comes first").hasMessageContaining("is below the assured limit");
    assertThatThrownBy(() -> Group.sharing(parent).reserve(10))
        .hasMessage("reserve must be at least 0 and below the parent's capacity 10 but was 10");
    assertThatThrownBy(() -> Group.sharing(parent).reserve(-1)).hasMessageContaining("but was -1");
    assertThatThrownBy(() -> Group.sharing(parent).reserve(Double.NaN)).hasMessageContaining("NaN");
    assertThatThrownBy(() -> Group.sharing(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void defaultsAndFigures() {
    Group g = Group.sharing(Limit.leakyBucket(1000, Rate.perSecond(1000)))
        .assured(Limit.leakyBucket(100, Rate.perSecond(100)));
    assertThat(g.reserve()).as("half the parent's capacity").isEqualTo(500);
    assertThat(g.assuredKeys()).isEqualTo(10);
    assertThat(g.groupOf("anything")).isEqualTo(Group.DEFAULT_GROUP);
    assertThat(g.ceilings()).isEmpty();
    assertThat(Group.sharing(Limit.leakyBucket(1, Rate.perSecond(1)))
        .assured(Limit.leakyBucket(1, Rate.perSecond(0.3))).assuredKeys()).isEqualTo(3);
    assertThat(g.toString()).contains("reserve 500");
  }

  @Test
  void groupFunction_badAnswers_areTheCallersError_namingTheKey() {
    RateLimiter l = Sluice.builder().group(Group.sharing(parent).assured(assured)
        .by(key -> key.startsWith("x") ? null : key.startsWith("y") ? "" : key.substring(5)))
        .clock(clock).build();
    assertThatThrownBy(() -> l.tryAcquire("xa")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the group function gave null for key \"xa\": a group must be a non-empty string");
    assertThatThrownBy(() -> l.tryAcquire("ya")).hasMessageContaining("gave \"\" for key \"ya\"");
    assertThatThrownBy(() -> l.tryAcquire("z")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("the group function failed on key \"z\"");
  }

  @Test
  void builder_refusesWhatDoesNotGoWithAGroup() {
    Group g = group();
    assertThatThrownBy(() -> Sluice.builder().group(g).limit(parent).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("give [leaky-bucket(10 @ 10/1s)] to Group.ceiling(...)");
    InProcessStore store = new InProcessStore(g, clock);
    assertThatThrownBy(() -> Sluice.builder().group(g).store(store)
        .leases(LeaseSettings.defaults()).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("leases(...) does not apply to a group");
    assertThatThrownBy(() -> Sluice.builder().group(Group.sharing(parent)))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("has no assured limit");
    assertThatThrownBy(() -> Sluice.builder().group(g).group(g))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("group was already set");
    assertThatThrownBy(() -> Sluice.builder().group(g).onStoreFailure(StoreFailure.FAIL_OPEN).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no store(...) was given");
    InProcessStore inProcess = new InProcessStore(List.of(parent), clock);
    dev.sluice.spi.DecisionStore plainStore = new dev.sluice.spi.DecisionStore() {
      @Override
      public long ticksPerSecond() {
        return 1_000_000;
      }

      @Override
      public dev.sluice.spi.Observation apply(String key, dev.sluice.spi.StoreRequest request) {
        return inProcess.apply(key, request);
      }

      @Override
      public void reset(String key) {
        inProcess.reset(key);
      }
    };
    assertThatThrownBy(() -> Sluice.builder().group(g).store(plainStore).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot decide groups");
    RateLimiter l = Sluice.builder().group(g).clock(clock).build();
    assertThat(l.limits()).containsExactly(assured, parent);
    assertThatThrownBy(() -> l.fillUp("t/a", 1)).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void onAStore_oneCallPerDecision_andTheFailurePolicyAnswersWhenItIsDown() {
    InProcessStore store = new InProcessStore(group(), clock);
    RateLimiter closed = Sluice.builder().group(group()).store(store).clock(clock).build();
    assertThat(closed.tryAcquire("t/a", 2).isBorrowed()).isFalse();
    assertThat(closed.tryAcquire("t/a", 4).isBorrowed()).isTrue();
    assertThat(closed.tryAcquire("t/a").isAllowed()).isFalse();
    assertThat(store.calls.get()).isEqualTo(3);
    closed.reset("t/a");
    assertThat(closed.tryAcquire("t/a", 2).isBorrowed()).as("a forgotten, the group not").isFalse();
    assertThat(closed.tryAcquire("t/a", 0.5).isAllowed()).as("the parent at 8 > 6").isFalse();

    store.down = true;
    Decision d = closed.tryAcquire("t/b");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isDegraded()).isTrue();
    RateLimiter open = Sluice.builder().group(group()).store(store).clock(clock)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    assertThat(open.tryAcquire("t/b").isAllowed()).isTrue();
    RateLimiter fallback = Sluice.builder().group(group()).store(store).clock(clock)
        .onStoreFailure(StoreFailure.FALLBACK_IN_MEMORY).maximumKeys(100).build();
    assertThat(fallback.tryAcquire("t/b", 2).isBorrowed()).isFalse();
    Decision borrowed = fallback.tryAcquire("t/b", 4);
    assertThat(borrowed.isDegraded()).isTrue();
    assertThat(borrowed.isBorrowed()).as("the in-memory group answers").isTrue();
    assertThat(fallback.stats().degradedDecisions()).isEqualTo(2);
    assertThatThrownBy(() -> fallback.tryAcquire("no-group")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sluice.builder().group(Group.sharing(parent).assured(assured)
            .by(k -> "bad\u0000group")).store(store).clock(clock).build().tryAcquire("k"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("the group of key \"k\" must not contain U+0000");
  }

  /** 16 threads, a flood of new keys in 300 groups: at most maximumKeys keys and groups, ever. */
  @Test
  void keyFlood_holdsAtMostMaximumKeys_keysAndGroups_underManyThreads() throws Exception {
    InMemoryGroupLimiter l = (InMemoryGroupLimiter) Sluice.builder().group(Group.sharing(
            Limit.leakyBucket(1000, Rate.perHour(1000))).assured(Limit.leakyBucket(5, Rate.perHour(5)))
            .by(key -> key.substring(0, key.indexOf('/'))))
        .clock(clock).maximumKeys(500).build();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong most = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(17);
    List<Future<?>> tasks = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int id = t;
      tasks.add(pool.submit(() -> {
        for (int i = 0; i < 20_000; i++) {
          int n = id * 20_000 + i;
          l.tryAcquire("g" + (n % 300) + "/" + n);
        }
      }));
    }
    tasks.add(pool.submit(() -> {
      while (!stop.get()) {
        most.accumulateAndGet(Math.max(l.keysHeld(), l.groupsHeld()), Math::max);
      }
    }));
    try {
      for (int t = 0; t < 16; t++) {
        tasks.get(t).get(120, TimeUnit.SECONDS);
      }
    } finally {
      stop.set(true);
      pool.shutdown();
      pool.awaitTermination(10, TimeUnit.SECONDS);
    }
    assertThat(most.get()).isLessThanOrEqualTo(500);
    assertThat(l.keysHeld()).isLessThanOrEqualTo(500);
    assertThat(l.groupsHeld()).isLessThanOrEqualTo(300);
    assertThat(l.stats().evictedBusy()).as("the flood forced evictions").isPositive();
  }

  @Test
  void checks_neverFillTheTables() {
    InMemoryGroupLimiter l = (InMemoryGroupLimiter) Sluice.builder().group(group()).clock(clock)
        .build();
    for (int i = 0; i < 1_000; i++) {
      assertThat(l.check("t" + i + "/a", 2).isAllowed()).isTrue();
    }
    assertThat(l.keysHeld()).isZero();
    assertThat(l.groupsHeld()).isZero();
    l.tryAcquire("t0/a", 6);
    Decision c = l.check("t0/b", 1);
    assertThat(c.isAllowed()).as("b's assured 1, into the reserve").isTrue();
    assertThat(c.perLimit().get(1).remaining()).as("the parent holds 6").isEqualTo(4);
    assertThat(l.keysHeld()).isEqualTo(1);
    assertThat(l.groupsHeld()).isEqualTo(1);
  }

  @Test
  void idleKeysAndGroups_areSweptAway_andStartEmptyAgain() {
    InMemoryGroupLimiter l = (InMemoryGroupLimiter) Sluice.builder().group(group()).clock(clock)
        .maximumKeys(300).build();
    for (int i = 0; i < 200; i++) {
      assertThat(l.tryAcquire("t" + i + "/a").isAllowed()).isTrue();
    }
    clock.now.addAndGet(3_000 * MS);   // every bucket has leaked empty
    for (int i = 0; i < 3_000; i++) {
      l.tryAcquire("u" + i + "/a");   // new keys sweep idle ones as they come
    }
    assertThat(l.keysHeld()).isLessThanOrEqualTo(300);
    assertThat(l.stats().evictedIdle()).as("the 200 idle keys and their 200 idle groups go first")
        .isGreaterThanOrEqualTo(400);
    Decision d = l.tryAcquire("t0/a", 6);
    assertThat(d.isAllowed()).as("t0's parent empty again: 6 borrowed").isTrue();
    assertThat(d.isBorrowed()).isTrue();
  }
}

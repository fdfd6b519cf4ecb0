package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The in-memory bound limiter of a single bucket, which keeps the key's cell at hand instead of
 * looking the key up: it must follow the key through everything that replaces its cell (reset,
 * eviction, idle sweeps, rebases) and never charge a cell that left the table. Every store's
 * bound limiter is also held to the conformance suite (testkit) and Lincheck.
 */
class KeyLimiterTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();

  private InMemoryRateLimiter limiter(long maximumKeys, long rebaseAge, Limit limit) {
    return new InMemoryRateLimiter(List.of(limit), clock, Scheduler.system(), maximumKeys, true,
        rebaseAge);
  }

  @Test
  void singleBucket_skipsTheLookup_otherLimitersForward() {
    RateLimiter one = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(3))).build();
    RateLimiter two = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(3)))
        .limit(Limit.leakyBucket(9, Rate.perSecond(1))).build();
    RateLimiter window = Sluice.builder().limit(Limit.fixedWindow(5, Duration.ofSeconds(1)))
        .build();
    assertThat(one.forKey("k").getClass()).isNotEqualTo(ForwardingKeyLimiter.class);
    assertThat(two.forKey("k").getClass()).isEqualTo(ForwardingKeyLimiter.class);
    assertThat(window.forKey("k").getClass()).isEqualTo(ForwardingKeyLimiter.class);
    assertThat(one.forKey("k").toString()).contains("k");
    assertThat(two.forKey("k").toString()).contains("k");
  }

  /**
   * The key's cell is evicted (the key bound is 2 and other keys flood in) while a bound limiter
   * holds it: the bound limiter then finds the key empty, as a keyed call does, and its next
   * charge lands in the key's new cell, which keyed calls see.
   */
  @Test
  void evictedCell_isLeft_andTheNewCellIsCharged() {
    InMemoryRateLimiter l = limiter(2, Long.MAX_VALUE, Limit.leakyBucket(10, Rate.perHour(1)));
    KeyLimiter hot = l.forKey("hot");
    assertThat(hot.tryAcquire(4).isAllowed()).isTrue();
    for (int i = 0; i < 10; i++) {
      l.tryAcquire("other-" + i, 10);   // busy keys: the emptiest, "hot", goes first
    }
    assertThat(l.evictedBusy()).isPositive();
    assertThat(l.state("hot")).as("evicted").isNull();
    assertThat(hot.check(1).remaining()).isEqualTo(10);
    assertThat(hot.tryAcquire(3).remaining()).isEqualTo(7);
    assertThat(l.check("hot", 1).remaining()).as("the keyed call sees the new cell's charge")
        .isEqualTo(7);
    assertThat(l.size()).isLessThanOrEqualTo(2);
  }

  /** A cell swept as idle while a bound limiter holds it: the next charge makes a new one. */
  @Test
  void sweptCell_isLeft_andTheKeyComesBack() {
    InMemoryRateLimiter l = limiter(1_000_000, Long.MAX_VALUE, Limit.leakyBucket(1, Rate.perSecond(1)));
    KeyLimiter k = l.forKey("k");
    assertThat(k.tryAcquire(1).isAllowed()).isTrue();
    clock.now.addAndGet(2_000_000_000L);   // idle
    for (int i = 0; i < 20_000 && l.state("k") != null; i++) {
      l.tryAcquire("new-" + i, 1);   // sweeps run on about every 64th new key
    }
    assertThat(l.state("k")).as("swept").isNull();
    assertThat(k.tryAcquire(1).isAllowed()).isTrue();
    assertThat(k.tryAcquire(1).isAllowed()).isFalse();
    assertThat(l.check("k", 1).isAllowed()).isFalse();
    assertThat(l.state("k")).isNotNull();
  }

  /**
   * A random walk through a bound limiter and keyed calls on one limiter whose cells are rebased
   * every 2 µs, and through keyed calls alone on one that never rebases: the same decisions.
   */
  @Test
  void rebasedCells_areFollowed() {
    for (Limit limit : List.of(Limit.leakyBucket(5, Rate.perSecond(3)),
        Limit.leakyBucket(1000, Rate.perDay(1e12)),
        Limit.leakyBucket(2.5, Rate.perSecond(1234.5678)))) {
      clock.now.set(1_000_000_000L);
      InMemoryRateLimiter rebased = limiter(1_000_000, 2_000, limit);
      InMemoryRateLimiter fixed = limiter(1_000_000, Long.MAX_VALUE, limit);
      KeyLimiter[] bound = {rebased.forKey("k0"), rebased.forKey("k1"), rebased.forKey("k1")};
      Random random = new Random(5);
      for (int step = 0; step < 20_000; step++) {
        clock.now.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(400_000));
        double cost = (1 + random.nextInt(300)) / 100.0;
        int which = random.nextInt(bound.length);
        KeyLimiter b = bound[which];
        String key = b.key();
        int op = random.nextInt(5);
        boolean keyed = random.nextBoolean();
        Decision expected = switch (op) {
          case 0 -> fixed.tryAcquire(key, cost);
          case 1 -> fixed.check(key, cost);
          case 2 -> fixed.reserve(key, cost);
          case 3 -> fixed.fillUp(key, cost);
          default -> {
            fixed.reset(key);
            yield null;
          }
        };
        Decision actual = switch (op) {
          case 0 -> keyed ? rebased.tryAcquire(key, cost) : b.tryAcquire(cost);
          case 1 -> keyed ? rebased.check(key, cost) : b.check(cost);
          case 2 -> keyed ? rebased.reserve(key, cost) : b.reserve(cost);
          case 3 -> rebased.fillUp(key, cost);
          default -> {
            if (keyed) {
              rebased.reset(key);
            } else {
              b.reset();
            }
            yield null;
          }
        };
        if (expected != null) {
          assertThat(DecisionFigures.of(actual)).as("%s step %d", limit, step)
              .isEqualTo(DecisionFigures.of(expected));
        }
      }
    }
  }

  /**
   * Eight threads drain one hot key at 3/s in phases, half through one shared bound limiter and
   * half by key, while the clock moves between phases by more than the rebase age and the key is
   * reset every 30th phase (at phases whose clock reading is a whole nanosecond, so that the
   * phases after a reset leak as many thousandths as those after the start): admissions are
   * exact.
   */
  @Test
  void boundAndKeyedCalls_underContention_loseAndDoubleNothing() throws Exception {
    clock.now.set(0);
    InMemoryRateLimiter l = limiter(1_000_000, 1_000, Limit.leakyBucket(5, Rate.perSecond(3)));
    KeyLimiter hot = l.forKey("hot");
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicLong admitted = new AtomicLong();
    long expected = 0;
    try {
      for (int phase = 0; phase < 200; phase++) {
        clock.now.set((phase * 1_000_000_000L + 2_999) / 3_000);   // 1/1000 unit a phase
        if (phase % 30 == 15) {
          (phase % 2 == 0 ? hot : l.forKey("hot")).reset();
          expected += 5_000;   // full again
        } else if (phase > 0) {
          expected += 1;
        } else {
          expected = 5_000;
        }
        CountDownLatch start = new CountDownLatch(1);
        Future<?>[] workers = new Future<?>[8];
        for (int t = 0; t < 8; t++) {
          boolean bound = t % 2 == 1;
          workers[t] = pool.submit(() -> {
            start.await();
            while ((bound ? hot.tryAcquire(0.001) : l.tryAcquire("hot", 0.001)).isAllowed()) {
              admitted.incrementAndGet();
            }
            return null;
          });
        }
        start.countDown();
        for (Future<?> w : workers) {
          w.get(30, TimeUnit.SECONDS);
        }
        assertThat(admitted.get()).as("phase %d", phase).isEqualTo(expected);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}

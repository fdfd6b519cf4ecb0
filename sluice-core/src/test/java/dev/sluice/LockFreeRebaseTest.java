package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

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
 * The lock-free bucket at rates whose unit is a fraction of a nanosecond: its one long counts
 * steps from the cell's origin, and a cell older than 2^62 / scale ns moves its backlog to a new
 * cell. Here cells are rebased after a few microseconds, so that every phase rebases them.
 */
class LockFreeRebaseTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();

  private InMemoryRateLimiter limiter(long rebaseAge, Limit limit) {
    return new InMemoryRateLimiter(List.of(limit), clock, Scheduler.system(), 1_000_000, true,
        rebaseAge);
  }

  /** The same random walk with cells rebased every 2 µs and never: the same decisions. */
  @Test
  void rebasedCells_decideAsCellsThatNeverMove() {
    for (Limit limit : List.of(Limit.leakyBucket(5, Rate.perSecond(3)),
        Limit.leakyBucket(1000, Rate.perDay(1e12)), Limit.leakyBucket(7, Rate.perSecond(7))
            .withPenalty(java.time.Duration.ofMillis(1)),
        Limit.leakyBucket(2.5, Rate.perSecond(1234.5678)))) {
      clock.now.set(1_000_000_000L);
      InMemoryRateLimiter rebased = limiter(2_000, limit);
      InMemoryRateLimiter fixed = limiter(Long.MAX_VALUE, limit);
      assertThat(rebased.isLockFree()).isTrue();
      Random random = new Random(7);
      for (int step = 0; step < 20_000; step++) {
        clock.now.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(400_000));
        double cost = (1 + random.nextInt(300)) / 100.0;
        String key = "k" + random.nextInt(3);
        int op = random.nextInt(4);
        Decision a = apply(rebased, op, key, cost);
        Decision b = apply(fixed, op, key, cost);
        assertThat(DecisionFigures.of(a)).as("%s step %d", limit, step)
            .isEqualTo(DecisionFigures.of(b));
        long[] held = fixed.state(key);
        if (held != null && held[0] > clock.now.get()) {
          assertThat(rebased.state(key)).as("%s step %d", limit, step).isEqualTo(held);
        } else {
          long[] other = rebased.state(key);   // empty: dropped, or kept as empty
          assertThat(other == null || other[0] <= clock.now.get()).as("%s step %d", limit, step)
              .isTrue();
        }
      }
    }
  }

  private static Decision apply(RateLimiter l, int op, String key, double cost) {
    return switch (op) {
      case 0 -> l.tryAcquire(key, cost);
      case 1 -> l.check(key, cost);
      case 2 -> l.fillUp(key, cost);
      default -> l.reserve(key, cost);
    };
  }

  /**
   * Eight threads drain one hot key at 3/s in phases; the clock moves between phases by more
   * than the rebase age, so the phase's first decisions race to rebase the cell. Admissions are
   * exact: after phase k, 5 + 3 * k / 1000 units (a phase is a third of a millisecond).
   */
  @Test
  void rebaseUnderContention_losesAndDoublesNothing() throws Exception {
    clock.now.set(0);
    InMemoryRateLimiter l = limiter(1_000, Limit.leakyBucket(5, Rate.perSecond(3)));
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicLong admitted = new AtomicLong();
    try {
      for (int phase = 0; phase < 200; phase++) {
        clock.now.set((phase * 1_000_000_000L + 2_999) / 3_000);   // 1/1000 unit a phase
        CountDownLatch start = new CountDownLatch(1);
        Future<?>[] workers = new Future<?>[8];
        for (int t = 0; t < 8; t++) {
          workers[t] = pool.submit(() -> {
            start.await();
            while (l.tryAcquire("hot", 0.001).isAllowed()) {
              admitted.incrementAndGet();
            }
            return null;
          });
        }
        start.countDown();
        for (Future<?> w : workers) {
          w.get(30, TimeUnit.SECONDS);
        }
        // 5 units, then 1/1000 unit a phase, in thousandths
        assertThat(admitted.get()).as("phase %d", phase).isEqualTo(5_000L + phase);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}

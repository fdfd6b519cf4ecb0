package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The key bound, idle-first eviction, and that eviction never loses an admitted charge. */
class EvictionTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();

  private InMemoryRateLimiter limiter(long maximumKeys, Limit... limits) {
    return (InMemoryRateLimiter) Sluice.builder().limits(limits).clock(clock).maximumKeys(maximumKeys).build();
  }

  @Test
  void bound_isHeld_andIdleKeysGoFirst() {
    // Idle keys go first within each sample of 256 entries that eviction looks at; a sample
    // with none evicts busy ones (docs/semantics.md). Where a sample starts depends on the
    // randomly timed sweeps, and with half the keys busy a run of 256 busy entries was met once
    // in CI-like runs: idle keys are four fifths here, so a sample without one is far-fetched.
    InMemoryRateLimiter l = limiter(1000, Limit.leakyBucket(5, Rate.perSecond(1)));
    for (int i = 0; i < 200; i++) {
      l.tryAcquire("busy-" + i, 5);   // full for 5 s
    }
    clock.now.addAndGet(1);
    for (int i = 0; i < 800; i++) {
      l.tryAcquire("idle-" + i, 0.000_000_001);   // empty again 1 ns later
    }
    clock.now.addAndGet(10);
    for (int i = 0; i < 250; i++) {
      l.tryAcquire("new-" + i, 1);
    }
    assertThat(l.size()).isLessThanOrEqualTo(1000);
    assertThat(l.evictedBusy()).as("only idle keys had to go").isZero();
    assertThat(l.evictedIdle()).isGreaterThanOrEqualTo(250);
    for (int i = 0; i < 200; i++) {
      assertThat(l.check("busy-" + i, 1).isAllowed()).as("busy-%s kept its level", i).isFalse();
    }
  }

  @Test
  void bound_whenEveryKeyIsBusy_evictsTheEmptiestAndCountsIt() {
    InMemoryRateLimiter l = limiter(10, Limit.leakyBucket(100, Rate.perSecond(1)));
    for (int i = 0; i < 30; i++) {
      l.tryAcquire("k" + i, i + 1);
    }
    assertThat(l.size()).isLessThanOrEqualTo(10);
    assertThat(l.evictedBusy()).isEqualTo(20);
  }

  @Test
  void idleKeys_areSweptWithoutPressure() {
    InMemoryRateLimiter l = limiter(1_000_000, Limit.fixedWindow(1, Duration.ofSeconds(1)));
    for (int i = 0; i < 10_000; i++) {
      l.tryAcquire("k" + i);
    }
    clock.now.addAndGet(Duration.ofSeconds(2).toNanos());
    for (int i = 0; i < 10_000; i++) {
      l.tryAcquire("later" + i);
    }
    assertThat(l.evictedIdle()).as("swept a few on every 64th new key").isGreaterThan(1000);
    assertThat(l.evictedBusy()).isZero();
  }

  /**
   * Regression (issue 11, defect 2): with eviction given up whenever another thread held the
   * sweep lock, two threads inserting new keys held 2.8 million keys under a bound of one million.
   * Eight threads insert distinct busy keys; a watcher samples the map while they run.
   */
  @Test
  void bound_holdsAtEveryMoment_underManyInsertingThreads() throws Exception {
    int threads = 8;
    int perThread = 50_000;
    long bound = 5_000;
    InMemoryRateLimiter l = limiter(bound, Limit.leakyBucket(10, Rate.perHour(1)));
    ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
    java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
    try {
      Future<Long> watcher = pool.submit(() -> {
        long most = 0;
        while (running.get()) {
          most = Math.max(most, l.size());
        }
        return most;
      });
      List<Future<Integer>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        fs.add(pool.submit(() -> {
          int admitted = 0;
          for (int i = 0; i < perThread; i++) {
            if (l.tryAcquire("t" + id + "-" + i).isAllowed()) {
              admitted++;
            }
          }
          return admitted;
        }));
      }
      long admitted = 0;
      for (Future<Integer> f : fs) {
        admitted += f.get(120, TimeUnit.SECONDS);
      }
      running.set(false);
      assertThat(watcher.get(10, TimeUnit.SECONDS)).as("most keys seen at any moment").isLessThanOrEqualTo(bound);
      assertThat(admitted).as("every new key is admitted once").isEqualTo((long) threads * perThread);
      assertThat(l.size()).isLessThanOrEqualTo(bound).isGreaterThanOrEqualTo(bound - bound / 100 - threads);
      assertThat(l.mappedKeys()).isEqualTo(l.size());
      assertThat(l.size() + l.evictedBusy() + l.evictedIdle())
          .as("every key inserted is either held or counted as evicted").isEqualTo(admitted);
    } finally {
      running.set(false);
      pool.shutdownNow();
    }
  }

  @Test
  void bound_ofOneKey_holdsUnderConcurrentInserts() throws Exception {
    InMemoryRateLimiter l = limiter(1, Limit.leakyBucket(10, Rate.perHour(1)));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int id = t;
        fs.add(pool.submit(() -> {
          for (int i = 0; i < 20_000; i++) {
            l.tryAcquire("t" + id + "-" + i);
            assertThat(l.size()).isLessThanOrEqualTo(1);
          }
        }));
      }
      for (Future<?> f : fs) {
        f.get(60, TimeUnit.SECONDS);
      }
      assertThat(l.size() + l.evictedBusy() + l.evictedIdle()).isEqualTo(80_000);
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Keys churn through a tiny bound while threads charge them: every admission lands on a live
   * cell (a charge is never applied to an evicted one), so per key at most the capacity is ever
   * admitted between evictions of that key, and the counters add up.
   */
  @Test
  void eviction_underConcurrency_neverOverAdmitsALiveKey() throws Exception {
    InMemoryRateLimiter l = limiter(1_000_000, Limit.leakyBucket(10, Rate.perHour(1)));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Integer>> fs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        fs.add(pool.submit(() -> {
          int admitted = 0;
          for (int i = 0; i < 20_000; i++) {
            if (l.tryAcquire("hot").isAllowed()) {
              admitted++;
            }
            l.tryAcquire("cold-" + (i % 500));
          }
          return admitted;
        }));
      }
      int admitted = 0;
      for (Future<Integer> f : fs) {
        admitted += f.get(60, TimeUnit.SECONDS);
      }
      assertThat(admitted).as("the hot key is never idle, so never evicted").isEqualTo(10);
    } finally {
      pool.shutdownNow();
    }
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.spi.DecisionStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Many threads over a store's pool of connections, the way a JDBC store is hammered: time is
 * frozen through the store's test hook, so the exact number each key may admit is known; every
 * admitted request is counted, nothing more is admitted, nothing fails (no deadlock, no
 * serialization failure reaches a caller). A store module extends this class.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class FrozenClockContentionSuite {
  /** For a store's test class, which extends this one. */
  protected FrozenClockContentionSuite() {}

  private static final int THREADS = 16;
  private static final long T0 = 1_700_000_000_000_000L;

  /**
   * A store whose keys carry {@code prefix}, whose time comes from {@code micros} (its test
   * hook), and whose per-decision timeout is generous (10 s: 16 threads share a small host).
   */
  protected abstract DecisionStore store(String prefix, LongSupplier micros);

  private RateLimiter limiter(Limit... limits) {
    DecisionStore store = store("conc:" + UUID.randomUUID() + ":", () -> T0);
    return Sluice.builder().limits(limits).store(store).build();
  }

  /** Runs {@code perThread} calls on each thread; returns admissions per key index. */
  private static AtomicLongArray run(RateLimiter l, int keys, int perThread) throws Exception {
    AtomicLongArray admitted = new AtomicLongArray(keys);
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int id = t;
        futures.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < perThread; i++) {
            int k = (id * 7919 + i * 31) % keys;
            if (l.tryAcquire("key:" + k).isAllowed()) {
              admitted.incrementAndGet(k);
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : futures) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    return admitted;
  }

  @Test
  public void hotKey_exactAccounting() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1000, Rate.perHour(1)));
    AtomicLongArray admitted = run(l, 1, 150);   // 2,400 calls on one key
    assertThat(admitted.get(0)).isEqualTo(1000);
    assertThat(l.stats().storeErrors()).isZero();
    assertThat(l.check("key:0").remaining()).isZero();
  }

  @Test
  public void manyKeys_exactAccounting_firstWritesRaceSafely() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(20, Rate.perHour(1)));
    int keys = 100;
    AtomicLongArray admitted = run(l, keys, 200);   // 3,200 calls, 32 per key, many racing on new rows
    for (int k = 0; k < keys; k++) {
      assertThat(admitted.get(k)).as("key " + k).isEqualTo(20);
    }
    assertThat(l.stats().storeErrors()).isZero();
  }

  @Test
  public void severalLimits_hotKey_allOrNothing() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(300, Rate.perHour(1)),
        Limit.fixedWindow(200, Duration.ofHours(1)));
    AtomicLongArray admitted = run(l, 1, 40);
    assertThat(admitted.get(0)).isEqualTo(200);
    // every admission charged both limits: the bucket holds 200 of 300
    assertThat(l.check("key:0").perLimit().get(0).remaining()).isEqualTo(100.0);
    assertThat(l.stats().storeErrors()).isZero();
  }
}

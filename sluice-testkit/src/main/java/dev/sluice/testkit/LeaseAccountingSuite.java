package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.spi.StoreReference;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol.Operation;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Leases on a real store under contention, with exact accounting: many threads lease grains of
 * one key at one instant (nothing leaks), and the grants add up to exactly the capacity, never
 * more; releasing every grant empties the bucket again. A store module extends this class.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class LeaseAccountingSuite {
  /** For a store's test class, which extends this one. */
  protected LeaseAccountingSuite() {}

  /** A store whose clock reads {@code micros} (the test hook), under a fresh key prefix. */
  protected abstract DecisionStore store(LongSupplier micros);

  @Test
  public void concurrentLeases_grantExactlyTheCapacity_andReleasesEmptyIt() throws Exception {
    long now = 1_763_900_000_000_000L;
    DecisionStore store = store(() -> now);
    StoreReference ref = StoreReference.of(
        List.of(Limit.leakyBucket(1000, Rate.perSecond(1.5)), Limit.leakyBucket(5000, Rate.perSecond(100))),
        store.ticksPerSecond());
    String key = "lease:" + System.nanoTime();
    int threads = 16;
    AtomicLong granted = new AtomicLong();
    AtomicLong calls = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(pool.submit(() -> {
          for (int i = 0; i < 60; i++) {
            long want = 1L + ThreadLocalRandom.current().nextInt(5);
            Observation seen = store.apply(key, ref.request(Operation.LEASE, 1, want));
            granted.addAndGet(ref.granted(seen.normalizedState(), seen.now(), 1, want));
            calls.incrementAndGet();
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
      assertThat(calls.get()).isEqualTo(threads * 60L);
      assertThat(granted.get()).as("grants add up to the capacity exactly").isEqualTo(1000);
      Observation full = store.apply(key, ref.request(Operation.CHECK, 1));
      assertThat(ref.decision(full.normalizedState(), now, Operation.CHECK, 1).level())
          .isEqualTo(1000.0);
      // every grant given back, in pieces, from all threads: empty again, never below
      List<Future<?>> back = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        back.add(pool.submit(() -> {
          for (int i = 0; i < 10; i++) {
            store.apply(key, ref.request(Operation.RELEASE, 1, 7));
          }
          return null;
        }));
      }
      for (Future<?> f : back) {
        f.get(60, TimeUnit.SECONDS);
      }
      Observation after = store.apply(key, ref.request(Operation.CHECK, 1));
      assertThat(ref.decision(after.normalizedState(), now, Operation.CHECK, 1).level()).isZero();
    } finally {
      pool.shutdownNow();
    }
  }
}

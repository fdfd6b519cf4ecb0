package dev.sluice.benchmarks;

import dev.sluice.LeaseSettings;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.List;
import org.openjdk.jmh.annotations.TearDown;
import io.github.bucket4j.Bucket;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Decisions on one hot key. Sluice goes through its keyed API (a map lookup and the lock-free
 * bucket); each peer is handed its single limiter object, which is the most favourable setting
 * for it. Run with {@code -t 1} and {@code -t 2}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class HotKeyBenchmark {
  private final RateLimiter sluice = Peers.sluice(1_000_000);
  private final Bucket bucket4j = Peers.bucket4j();
  private final com.google.common.util.concurrent.RateLimiter guava = Peers.guava();
  private final io.github.resilience4j.ratelimiter.RateLimiter resilience4j = Peers.resilience4j("hot");
  private final String key = "user:42";
  /** Fleet mode on a store in this JVM: the hot key is answered from its lease. */
  private final ReferenceStore store = new ReferenceStore(List.of(Peers.limit()));
  private final RateLimiter sluiceLeased = Sluice.builder().limit(Peers.limit()).store(store)
      .leases(LeaseSettings.defaults()).build();

  /** Prints how many store calls the fleet-mode limiter made per decision. */
  @TearDown
  public void storeCalls() {
    double local = sluiceLeased.stats().leases().unitsSpent();
    if (local > 0) {
      System.out.printf(java.util.Locale.ROOT, "%nfleet mode: %.0f units spent locally, %d store calls%n",
          local, store.calls.get());
    }
    sluiceLeased.close();
  }

  /** The floor: one monotonic clock reading, which every limiter here pays per decision. */
  @Benchmark
  public long baselineNanoTime() {
    return System.nanoTime();
  }

  @Benchmark
  public boolean sluice() {
    return sluice.tryAcquire(key).isAllowed();
  }

  /** Fleet mode with a lease held: one CAS on what is held, no store call. */
  @Benchmark
  public boolean sluiceLeased() {
    return sluiceLeased.tryAcquire(key).isAllowed();
  }

  @Benchmark
  public boolean bucket4j() {
    return bucket4j.tryConsume(1);
  }

  @Benchmark
  public boolean guava() {
    return guava.tryAcquire();
  }

  @Benchmark
  public boolean resilience4j() {
    return resilience4j.acquirePermission();
  }
}

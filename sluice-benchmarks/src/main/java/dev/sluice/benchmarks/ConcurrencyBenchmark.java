package dev.sluice.benchmarks;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.FixedLimit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import java.time.Duration;
import java.util.Optional;
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
 * Acquire-and-release pairs on one limit with room: Sluice's in-memory
 * concurrency limiter on one key against Netflix's {@code SimpleLimiter} with a fixed limit and
 * Resilience4j's {@code SemaphoreBulkhead}, each peer handed its one limiter object. Sluice's
 * per-key path (keys from a set of 1,024) is reported beside them. Run with {@code -t 1} and
 * {@code -t 2}:
 *
 * <pre>
 * java -jar sluice-benchmarks/target/benchmarks.jar ConcurrencyBenchmark -t 1 -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ConcurrencyBenchmark {
  /** Room for every thread: the pairs never wait or refuse. */
  private static final int LIMIT = 64;

  private final ConcurrencyLimiter sluice = ConcurrencyLimiter.builder().limit(LIMIT).build();
  /** The same limiter on a clock that never moves: its leases never end; for measuring only. */
  private final ConcurrencyLimiter frozen = ConcurrencyLimiter.builder().limit(LIMIT)
      .clock(() -> 42L).build();
  private final dev.sluice.concurrency.Bulkhead sluiceBulkhead =
      dev.sluice.concurrency.Bulkhead.builder(LIMIT).build();
  private final Limiter<Void> netflix = SimpleLimiter.newBuilder()
      .limit(FixedLimit.of(LIMIT)).build();
  private final Bulkhead resilience4j = Bulkhead.of("bench", BulkheadConfig.custom()
      .maxConcurrentCalls(LIMIT).maxWaitDuration(Duration.ZERO).build());
  private final String[] keys = new String[1024];

  public ConcurrencyBenchmark() {
    for (int i = 0; i < keys.length; i++) {
      keys[i] = "tenant-" + i;
    }
  }

  /** A thread's position in the key set. */
  @State(Scope.Thread)
  public static class Cursor {
    int next;
  }

  @Benchmark
  public boolean sluice() {
    Acquisition a = sluice.tryAcquire("backend");
    if (a.isAcquired()) {
      a.permit().close();
      return true;
    }
    return false;
  }

  /** The path with no permit object: a handle, released by key and handle. */
  @Benchmark
  public boolean sluiceHandle() {
    long h = sluice.tryAcquireHandle("backend");
    if (h >= 0) {
      sluice.release("backend", h, Outcome.SUCCESS);
      return true;
    }
    return false;
  }

  /**
   * The handle path less its one clock reading (the start of the permit's lease, which an exact
   * lease needs): what the rest of the keyed path costs.
   */
  @Benchmark
  public boolean sluiceHandleWithoutClock() {
    long h = frozen.tryAcquireHandle("backend");
    if (h >= 0) {
      frozen.release("backend", h, Outcome.SUCCESS);
      return true;
    }
    return false;
  }

  /**
   * One reading of the system clock, {@link System#nanoTime()}: the floor under any permit whose
   * lease starts when it is granted.
   */
  @Benchmark
  public long clockReading() {
    return System.nanoTime();
  }

  /** Like with like: one limit, lock-free, a permit as a number, no key. */
  @Benchmark
  public boolean sluiceBulkhead() {
    long h = sluiceBulkhead.tryAcquire();
    if (h >= 0) {
      sluiceBulkhead.release(h);
      return true;
    }
    return false;
  }

  @Benchmark
  public boolean sluicePerKey(Cursor c) {
    Acquisition a = sluice.tryAcquire(keys[c.next++ & (keys.length - 1)]);
    if (a.isAcquired()) {
      a.permit().close();
      return true;
    }
    return false;
  }

  @Benchmark
  public boolean netflix() {
    Optional<Limiter.Listener> l = netflix.acquire(null);
    if (l.isPresent()) {
      l.get().onSuccess();
      return true;
    }
    return false;
  }

  @Benchmark
  public boolean resilience4j() {
    if (resilience4j.tryAcquirePermission()) {
      resilience4j.onComplete();
      return true;
    }
    return false;
  }
}

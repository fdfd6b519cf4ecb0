package dev.sluice.benchmarks;

import dev.sluice.concurrency.Bulkhead;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * What asking the health shedder costs a request: {@code admit} + {@code end} on a healthy
 * backend (the signals read at most every 100 ms, by one caller), against the cheapest thing a
 * filter could do instead (an in-flight counter up and down) and against Sluice's lock-free
 * {@code Bulkhead} pair, in the same run.
 *
 * <pre>
 * java -jar sluice-benchmarks/target/benchmarks.jar HealthBenchmark -t {1,2} -f 1 -wi 3 -w 1 -i 5 -r 1 -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class HealthBenchmark {
  private final HealthShedder shedder = HealthShedder.builder()
      .signal(HealthSignal.of("cpu", () -> 0.2), 0.8, 0.95).build();
  private final HealthShedder unguarded = HealthShedder.builder()
      .signal(HealthSignal.of("cpu", () -> 0.2), 0.8, 0.95).guard(false).build();
  private final AtomicInteger counter = new AtomicInteger();
  private final Bulkhead bulkhead = Bulkhead.builder(64).build();

  /** The shedder's admit and end, healthy: what every request through a filter pays. */
  @Benchmark
  public boolean shedder() {
    HealthShedder.Verdict v = shedder.admit(Priority.NORMAL);
    v.end();
    return v.admitted();
  }

  /** The same without the guard's bookkeeping (its latency windows are still kept on end). */
  @Benchmark
  public boolean shedderUnguarded() {
    HealthShedder.Verdict v = unguarded.admit(Priority.NORMAL);
    v.end();
    return v.admitted();
  }

  /** A baseline: one counter up and down. */
  @Benchmark
  public int counter() {
    counter.incrementAndGet();
    return counter.decrementAndGet();
  }

  /** Sluice's lock-free bulkhead: acquire and release one permit. */
  @Benchmark
  public boolean bulkhead() {
    long h = bulkhead.tryAcquire();
    return h >= 0 && bulkhead.release(h);
  }
}

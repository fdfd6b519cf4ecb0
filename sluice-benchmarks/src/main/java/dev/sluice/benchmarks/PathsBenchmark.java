package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.internal.EngineAccess;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the Java copy of the bucket's admit rule in {@code LockFreeBucket} buys (a copy of a rule
 * stays only if it pays for itself): one hot key of one bucket that always admits, decided on the
 * lock-free path ({@code lockFree}: one CAS on one long, in steps from the cell's origin) and on
 * the general path that every other limit takes ({@code general}: {@code BucketRules} under the
 * cell's lock), at a rate of whole nanoseconds and at 3/s. The general path is set through
 * {@code EngineAccess.generalPathOnly}, which core exports to Sluice's own modules only.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PathsBenchmark {
  @Param({"1e9", "3"})
  public double perSecond;

  private RateLimiter lockFree;
  private RateLimiter general;
  private final String key = "user:42";

  @Setup(Level.Trial)
  public void setUp() {
    Limit limit = Limit.leakyBucket(perSecond * 1e8, Rate.perSecond(perSecond));
    lockFree = Sluice.builder().limit(limit).maximumKeys(1_000).build();
    general = EngineAccess.generalPathOnly(Sluice.builder().limit(limit).maximumKeys(1_000))
        .build();
  }

  /** Each iteration starts from an empty bucket (a second of calls fills 1e8 at most). */
  @Setup(Level.Iteration)
  public void empty() {
    lockFree.reset(key);
    general.reset(key);
  }

  @Benchmark
  public boolean lockFree() {
    return lockFree.tryAcquire(key).isAllowed();
  }

  @Benchmark
  public boolean general() {
    return general.tryAcquire(key).isAllowed();
  }
}

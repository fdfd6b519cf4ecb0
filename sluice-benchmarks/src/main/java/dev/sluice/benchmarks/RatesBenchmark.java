package dev.sluice.benchmarks;

import dev.sluice.KeyLimiter;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.time.Duration;
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
 * One hot key at rates whose unit of cost is a whole number of nanoseconds ({@code 1e9/s}: 1 ns)
 * and rates where it is not (3/s, 7/s, 10^12/day: 86.4 ns), each with one limit ({@code one}) and
 * with two ({@code two}: the same limit and a second of twice its capacity and rate).
 *
 * <p>{@code admit}: a capacity of 10^8 seconds of the rate (3 x 10^8 units at 3/s), emptied before
 * each iteration, so that every call of a run is admitted. {@code bound}: {@code one} through
 * {@link RateLimiter#forKey}, on the same key. {@code reject}: a bucket of one second of the rate, filled, asked
 * for half of it; it admits about twice a second, every other call is refused with its figures.
 * Peers, in the same run: {@code HotKeyBenchmark.(guava|resilience4j)}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RatesBenchmark {
  @Param({"1e9/s", "3/s", "7/s", "1e12/day"})
  public String rate;

  @Param({"admit", "reject"})
  public String outcome;

  private RateLimiter one;
  private RateLimiter two;
  private KeyLimiter bound;
  private double cost;
  private final String key = "user:42";

  @Setup(Level.Trial)
  public void setUp() {
    String[] parts = rate.split("/");
    double amount = Double.parseDouble(parts[0]);
    Duration period = parts[1].equals("s") ? Duration.ofSeconds(1) : Duration.ofDays(1);
    Rate r = Rate.of(amount, period);
    Rate twice = Rate.of(2 * amount, period);
    double perSecond = amount / period.getSeconds();
    boolean admit = outcome.equals("admit");
    double capacity = admit ? perSecond * 1e8 : perSecond;
    cost = admit ? 1 : capacity / 2;
    one = Sluice.builder().limit(Limit.leakyBucket(capacity, r)).maximumKeys(1_000).build();
    two = Sluice.builder().limit(Limit.leakyBucket(capacity, r))
        .limit(Limit.leakyBucket(2 * capacity, twice)).maximumKeys(1_000).build();
    bound = one.forKey(key);
    if (!admit) {
      one.fillUp(key, capacity);
      two.fillUp(key, 2 * capacity);
    }
  }

  /** Admit: each iteration starts from an empty bucket (a second of calls fills 1e8 at most). */
  @Setup(Level.Iteration)
  public void empty() {
    if (outcome.equals("admit")) {
      one.reset(key);
      two.reset(key);
    }
  }

  @Benchmark
  public boolean one() {
    return one.tryAcquire(key, cost).isAllowed();
  }

  /** {@code one} bound to the key ({@link RateLimiter#forKey}): no lookup of the key per call. */
  @Benchmark
  public boolean bound() {
    return bound.tryAcquire(cost).isAllowed();
  }

  @Benchmark
  public boolean two() {
    return two.tryAcquire(key, cost).isAllowed();
  }
}

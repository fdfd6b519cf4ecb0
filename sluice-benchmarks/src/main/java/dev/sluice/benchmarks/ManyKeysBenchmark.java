package dev.sluice.benchmarks;

import dev.sluice.RateLimiter;
import io.github.bucket4j.Bucket;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
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
 * Decisions spread over a million keys, each key touched at random. Sluice's keyed API against
 * each peer kept per key in a ConcurrentHashMap with computeIfAbsent, which is how their users
 * limit per key in-process. All maps are filled before measuring. Run with {@code -t 1} and
 * {@code -t 2}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms4g", "-Xmx4g"})
public class ManyKeysBenchmark {
  @Param("1000000")
  public int keys;

  private String[] names;
  private RateLimiter sluice;
  private final ConcurrentHashMap<String, Bucket> bucket4j = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, com.google.common.util.concurrent.RateLimiter> guava =
      new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, io.github.resilience4j.ratelimiter.RateLimiter> resilience4j =
      new ConcurrentHashMap<>();

  @Setup(Level.Trial)
  public void setUp() {
    names = new String[keys];
    sluice = Peers.sluice(keys * 2L);
    for (int i = 0; i < keys; i++) {
      names[i] = "user:" + i;
      sluice.tryAcquire(names[i]);
      bucket4j.put(names[i], Peers.bucket4j());
      guava.put(names[i], Peers.guava());
      resilience4j.put(names[i], Peers.resilience4j(names[i]));
    }
  }

  private String next() {
    return names[ThreadLocalRandom.current().nextInt(keys)];
  }

  @Benchmark
  public boolean sluice() {
    return sluice.tryAcquire(next()).isAllowed();
  }

  @Benchmark
  public boolean bucket4j() {
    return bucket4j.computeIfAbsent(next(), k -> Peers.bucket4j()).tryConsume(1);
  }

  @Benchmark
  public boolean guava() {
    return guava.computeIfAbsent(next(), k -> Peers.guava()).tryAcquire();
  }

  @Benchmark
  public boolean resilience4j() {
    return resilience4j.computeIfAbsent(next(), Peers::resilience4j).acquirePermission();
  }
}

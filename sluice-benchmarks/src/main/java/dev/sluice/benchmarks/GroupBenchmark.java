package dev.sluice.benchmarks;

import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
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
 * A group's decision in memory: each thread's own key in one group, so every decision charges
 * the one hot parent (the key's monitor, then a CAS on the parent). Next to it, in the same run:
 * the same per-key limits without a group (the key's own buckets only), and a plain decision on
 * one hot key shared by all threads. Limits so large that everything is admitted: this measures
 * the admitting path. Run with {@code -t 1} and {@code -t 2}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GroupBenchmark {
  private static final double RATE = 1e9;
  private final Limit parent = Limit.leakyBucket(RATE, Rate.perSecond(RATE));
  private final Limit assured = Limit.leakyBucket(RATE / 10, Rate.perSecond(RATE / 10));
  private final Limit ceiling = Limit.leakyBucket(RATE / 2, Rate.perSecond(RATE / 2));
  private final RateLimiter group = Sluice.builder()
      .group(Group.sharing(parent).assured(assured).ceiling(ceiling)).build();
  /** The key's own limits, without a parent. */
  private final RateLimiter keyOnly = Sluice.builder().limit(assured).limit(ceiling).build();
  /** The parent's limit as one plain key every thread shares. */
  private final RateLimiter hotKey = Sluice.builder().limit(parent).build();
  private final AtomicInteger threads = new AtomicInteger();

  /** Each thread's own key. */
  @State(Scope.Thread)
  public static class Key {
    String key;

    @org.openjdk.jmh.annotations.Setup
    public void setUp(GroupBenchmark b) {
      key = "client-" + b.threads.incrementAndGet();
    }
  }

  @Benchmark
  public boolean group(Key k) {
    return group.tryAcquire(k.key).isAllowed();
  }

  @Benchmark
  public boolean keyOnly(Key k) {
    return keyOnly.tryAcquire(k.key).isAllowed();
  }

  @Benchmark
  public boolean hotKey() {
    return hotKey.tryAcquire("hot").isAllowed();
  }
}

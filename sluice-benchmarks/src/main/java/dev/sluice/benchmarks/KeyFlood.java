package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

/**
 * A flood of new keys against an in-memory limiter with a key bound, in one run, on the same
 * threads: (1) decisions on keys it already holds (the steady state), (2) new keys while the map
 * is below the bound, (3) new keys at the bound, each one evicting (every key is busy: 1 per
 * hour). Reports decisions per second of each phase, their ratios, and the most keys the limiter
 * reported at any sampled moment.
 *
 * <p>Run: {@code java -Xmx2g -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.KeyFlood [threads=2] [newKeys=10000000] [maximumKeys=1000000]}
 */
public final class KeyFlood {
  private KeyFlood() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    long flood = args.length > 1 ? Long.parseLong(args[1]) : 10_000_000L;
    long bound = args.length > 2 ? Long.parseLong(args[2]) : 1_000_000L;
    RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1)))
        .maximumKeys(bound).build();
    System.out.printf(Locale.ROOT, "threads %d, maximumKeys %,d, rate 1/h (every key stays busy)%n",
        threads, bound);

    AtomicBoolean running = new AtomicBoolean(true);
    AtomicLong most = new AtomicLong();
    Thread watcher = new Thread(() -> {
      while (running.get()) {
        most.accumulateAndGet(size(limiter), Math::max);
        try {
          Thread.sleep(1);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "watcher");
    watcher.setDaemon(true);
    watcher.start();

    // fill to the bound (new keys below it), then steady state on those keys, then the flood
    double below = run("new keys below the bound", threads, bound, i -> "fill-" + i, limiter);
    run("warm-up on held keys", threads, bound, i -> "fill-" + (i % bound), limiter);
    double steady = run("decisions on held keys", threads, bound * 4, i -> "fill-" + (i % bound), limiter);
    double flooded = run("new keys at the bound", threads, flood, i -> "flood-" + i, limiter);
    running.set(false);
    watcher.join();
    System.out.printf(Locale.ROOT, "flood / steady state: %.2f; flood / new keys below the bound: %.2f%n",
        flooded / steady, flooded / below);
    System.out.printf(Locale.ROOT, "most keys at any moment sampled (every ms): %,d (bound %,d); held at the end: %,d;"
        + " evicted busy: %,d; heap used: %,d MiB of %,d MiB%n", most.get(), bound, size(limiter),
        limiter.stats().evictedBusy(), used() >> 20, Runtime.getRuntime().maxMemory() >> 20);
  }

  private static double run(String what, int threads, long n, IntFunction<String> key,
      RateLimiter limiter) throws InterruptedException {
    // keys made beforehand, per thread, so that the timing holds decisions only
    long per = n / threads;
    String[][] keys = new String[threads][];
    for (int t = 0; t < threads; t++) {
      keys[t] = new String[(int) per];
      for (int i = 0; i < per; i++) {
        keys[t][i] = key.apply((int) (t * per + i));
      }
    }
    CountDownLatch start = new CountDownLatch(1);
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      String[] mine = keys[t];
      ts[t] = new Thread(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          return;
        }
        for (String k : mine) {
          limiter.tryAcquire(k);
        }
      });
      ts[t].start();
    }
    long t0 = System.nanoTime();
    start.countDown();
    for (Thread t : ts) {
      t.join();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    double rate = per * threads / seconds;
    System.out.printf(Locale.ROOT, "  %-28s %,13d decisions in %6.2f s: %,12.0f per second%n", what,
        per * threads, seconds, rate);
    return rate;
  }

  private static long size(RateLimiter limiter) {
    return limiter.stats().keysHeld();
  }

  private static long used() {
    Runtime rt = Runtime.getRuntime();
    System.gc();
    return rt.totalMemory() - rt.freeMemory();
  }
}

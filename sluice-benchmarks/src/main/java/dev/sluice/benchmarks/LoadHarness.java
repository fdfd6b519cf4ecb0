package dev.sluice.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntPredicate;

/**
 * Closed-loop load for the store benchmarks: N caller threads each call a decision as fast as it
 * answers, on one hot key or on uniformly random keys; throughput and latency percentiles.
 */
final class LoadHarness {
  /** Latencies kept per caller, the count included. */
  private static final int MAX_SAMPLES = 2_000_001;

  private LoadHarness() {}

  /** A port that was free on this machine a moment ago, for a server the benchmark starts. */
  static int freePort() throws java.io.IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * The Redis a load harness runs against: the URI given as the first argument, or a Redis 6.2
   * (embedded-redis) started on a free loopback port, which {@link #stop} stops.
   */
  static redis.embedded.RedisServer embeddedRedisUnless(String given) throws java.io.IOException {
    if (given != null) {
      return null;
    }
    redis.embedded.RedisServer server = redis.embedded.RedisServer.newRedisServer()
        .port(freePort()).bind("127.0.0.1").setting("save \"\"").setting("appendonly no").build();
    server.start();
    return server;
  }

  /** The URI of the Redis given, or of the one started. */
  static String redisUri(String given, redis.embedded.RedisServer started) {
    return given != null ? given : "redis://127.0.0.1:" + started.ports().get(0);
  }

  static void header() {
    System.out.printf(Locale.ROOT, "%-10s %-8s %7s %12s %10s %10s%n", "limiter", "keys", "callers",
        "decisions/s", "p50 µs", "p99 µs");
  }

  /** One second of warm-up, then {@code seconds} measured; prints one row, returns decisions/s. */
  static double run(String name, int keys, int callers, int seconds, IntPredicate decide)
      throws InterruptedException {
    // warm-up: a second of the same load, not recorded
    load(keys, callers, 1, decide);
    long[][] lat = load(keys, callers, seconds, decide);
    long count = count(lat);
    long[] all = new long[(int) Math.min(count, Integer.MAX_VALUE - 8)];
    int n = 0;
    for (long[] l : lat) {
      int m = (int) Math.min(l[0], l.length - 1);
      System.arraycopy(l, 1, all, n, Math.min(m, all.length - n));
      n += Math.min(m, all.length - n);
    }
    long[] sample = Arrays.copyOf(all, n);
    Arrays.sort(sample);
    System.out.printf(Locale.ROOT, "%-10s %-8s %7d %12.0f %10.1f %10.1f%n", name,
        keys == 1 ? "hot" : keys, callers, count / (double) seconds,
        sample[(int) (n * 0.50)] / 1e3, sample[(int) Math.min(n - 1, n * 0.99)] / 1e3);
    return count / (double) seconds;
  }

  /** The decisions of all callers of a {@link #load}. */
  static long count(long[][] perCaller) {
    long count = 0;
    for (long[] caller : perCaller) {
      count += caller[0];
    }
    return count;
  }

  /** Per caller: [count, latency ns...] (latencies kept up to 2M per caller). */
  static long[][] load(int keys, int callers, int seconds, IntPredicate decide)
      throws InterruptedException {
    long[][] out = new long[callers][];
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(callers);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < callers; t++) {
      int id = t;
      Thread th = new Thread(() -> {
        // grown as needed: 64 callers zeroing 16 MB each at the start took CPU from the run
        long[] lat = new long[4_097];
        long count = 0;
        ThreadLocalRandom r = ThreadLocalRandom.current();
        while (!stop.get()) {
          int k = keys == 1 ? 0 : r.nextInt(keys);
          long start = System.nanoTime();
          decide.test(k);
          long took = System.nanoTime() - start;
          count++;
          if (count == lat.length && lat.length < MAX_SAMPLES) {
            lat = Arrays.copyOf(lat, Math.min(MAX_SAMPLES, 2 * lat.length - 1));
          }
          if (count < lat.length) {
            lat[(int) count] = took;
          }
        }
        lat[0] = count;
        out[id] = lat;
        done.countDown();
      });
      th.setDaemon(true);
      threads.add(th);
      th.start();
    }
    Thread.sleep(seconds * 1000L);
    stop.set(true);
    done.await();
    return out;
  }
}

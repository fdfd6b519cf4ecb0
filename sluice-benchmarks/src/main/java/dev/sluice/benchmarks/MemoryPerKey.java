package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.time.Duration;
import java.util.Locale;

/**
 * Measures the heap an in-memory limiter holds per key, beyond the key strings themselves (which
 * the caller owns either way). Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.MemoryPerKey}.
 */
public final class MemoryPerKey {
  private MemoryPerKey() {}

  public static void main(String[] args) throws InterruptedException {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    System.out.printf(Locale.ROOT, "keys: %,d; bytes held per key (key strings excluded)%n", n);
    measure(n, "leaky bucket (one long, lock-free)",
        Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).maximumKeys(n));
    measure(n, "leaky bucket at 3/s (one long of steps, lock-free)",
        Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(3))).maximumKeys(n));
    measure(n, "two leaky buckets (state slots, per-key lock)",
        Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1)))
            .limit(Limit.leakyBucket(100, Rate.perDay(1))).maximumKeys(n));
    measure(n, "sliding window",
        Sluice.builder().limit(Limit.slidingWindow(10, Duration.ofHours(1))).maximumKeys(n));
    // As the service holds keys: each request's key is a new string the map keeps (here 16
    // characters, e.g. an API key id), so its bytes count too.
    measure(n, "service key: leaky bucket + its 16-char key string",
        Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).maximumKeys(n), null);
  }

  private static void measure(int n, String what, Sluice.Builder builder) throws InterruptedException {
    String[] keys = new String[n];
    for (int i = 0; i < n; i++) {
      keys[i] = "user:" + i;
    }
    measure(n, what, builder, keys);
  }

  private static void measure(int n, String what, Sluice.Builder builder, String[] keys)
      throws InterruptedException {
    long before = used();
    RateLimiter limiter = builder.build();
    boolean owned = keys == null;
    if (owned) {
      for (int i = 0; i < n; i++) {
        limiter.tryAcquire(String.format(Locale.ROOT, "key-%012d", i));   // made per request
      }
      keys = new String[] {"key-000000000000"};
    } else {
      for (String k : keys) {
        limiter.tryAcquire(k);
      }
    }
    long after = used();
    System.out.printf(Locale.ROOT, "  %-48s %6.1f bytes/key%n", what, (after - before) / (double) n);
    if (limiter.check(keys[keys.length - 1]).remaining() < 0 || (!owned && keys.length != n)) {
      throw new AssertionError("keep the limiter and keys reachable");
    }
  }

  /** The heap in use after four collections (shared with {@link TopKeysMemory}). */
  static long used() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}

package dev.sluice.benchmarks;

import dev.sluice.TopKeys;
import java.time.Duration;
import java.util.Locale;

/**
 * Measures the heap a full {@link TopKeys} sketch holds (the service keeps one per policy and
 * concurrency limit for {@code /v1/top-refused}), without and with its keys' strings. Run:
 * {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.TopKeysMemory}.
 */
public final class TopKeysMemory {
  private TopKeysMemory() {}

  public static void main(String[] args) throws InterruptedException {
    int capacity = args.length > 0 ? Integer.parseInt(args[0]) : 256;
    int sketches = 200;
    String[] keys = new String[capacity + capacity / 4];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = String.format(Locale.ROOT, "key-%012d", i);
    }
    long before = used();
    TopKeys[] all = new TopKeys[sketches];
    for (int s = 0; s < sketches; s++) {
      all[s] = TopKeys.of(capacity, Duration.ofMinutes(5));
      for (String k : keys) {
        all[s].add(k);   // shared strings: the sketch's own bytes
      }
    }
    long shared = used();
    TopKeys[] owning = new TopKeys[sketches];
    for (int s = 0; s < sketches; s++) {
      owning[s] = TopKeys.of(capacity, Duration.ofMinutes(5));
      for (int i = 0; i < keys.length; i++) {
        owning[s].add(String.format(Locale.ROOT, "key-%012d", i));   // each its own, as requests bring them
      }
    }
    long owned = used();
    System.out.printf(Locale.ROOT, "a full sketch of %d keys: %,.0f bytes without its keys,"
        + " %,.0f with its 16-char key strings%n", capacity, (shared - before) / (double) sketches,
        (owned - shared) / (double) sketches);
    if (all[0].size() != capacity || owning[0].size() != capacity) {
      throw new AssertionError("keep the sketches reachable");
    }
  }

  private static long used() throws InterruptedException {
    return MemoryPerKey.used();
  }
}

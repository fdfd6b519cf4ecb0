package dev.sluice.concurrency;

import dev.sluice.Clock;
import java.util.Arrays;

/**
 * Two counts over a sliding window cut in slots (the client side's windows: {@link
 * AdaptiveThrottle}'s requests and accepts, {@link RetryBudget}'s successes and retries): a slot's
 * counts age out together once it is {@code slots} slots old. Not thread-safe: its owner
 * synchronizes.
 */
final class SlidingCounts {
  private final int slots;
  private final long slotNanos;
  private final Clock clock;
  private final long[] first;
  private final long[] second;
  /** The slot number (time / slot length) each array cell holds. */
  private final long[] slotOf;

  SlidingCounts(int slots, long windowNanos, Clock clock) {
    this.slots = slots;
    this.slotNanos = Math.max(1, windowNanos / slots);
    this.clock = clock;
    this.first = new long[slots];
    this.second = new long[slots];
    this.slotOf = new long[slots];
    Arrays.fill(slotOf, Long.MIN_VALUE);
  }

  /** The current slot, its cell cleared if it held an older one. */
  long current() {
    long slot = Math.floorDiv(clock.nanoTime(), slotNanos);
    int i = index(slot);
    if (slotOf[i] != slot) {
      slotOf[i] = slot;
      first[i] = 0;
      second[i] = 0;
    }
    return slot;
  }

  void addFirst(long slot) {
    first[index(slot)]++;
  }

  void addSecond(long slot) {
    second[index(slot)]++;
  }

  /** The first count over the window's slots, up to {@code slot}. */
  long first(long slot) {
    return sum(first, slot);
  }

  /** The second count over the window's slots, up to {@code slot}. */
  long second(long slot) {
    return sum(second, slot);
  }

  private int index(long slot) {
    return (int) Math.floorMod(slot, (long) slots);
  }

  private long sum(long[] counts, long slot) {
    long total = 0;
    for (int i = 0; i < slots; i++) {
      if (slotOf[i] != Long.MIN_VALUE && slot - slotOf[i] < slots) {
        total += counts[i];
      }
    }
    return total;
  }
}

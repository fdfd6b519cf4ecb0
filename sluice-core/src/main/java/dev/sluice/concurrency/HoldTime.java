package dev.sluice.concurrency;

import java.time.Duration;

/**
 * How long a key's permits are held (a moving average of those that end {@link Outcome#SUCCESS}
 * or {@link Outcome#DROPPED}), and what deadline-aware waits read from it: whether a wait is
 * hopeless, and how long a caller with a deadline should wait. One per key, in memory and on a
 * store (this JVM's permits). Not thread-safe: its owner guards it.
 */
final class HoldTime {
  /** Nanoseconds; negative while no permit has ended. */
  private double meanNanos = -1;

  /** A permit of the key ended with {@code outcome}, held {@code nanos}. */
  void learn(long nanos, Outcome outcome) {
    if (outcome == Outcome.SUCCESS || outcome == Outcome.DROPPED) {
      meanNanos = meanNanos < 0 ? nanos : 0.9 * meanNanos + 0.1 * nanos;
    }
  }

  /**
   * Whether a wait for {@code ahead} weight (the waiters before it and its own) on a key of
   * {@code limit} would outlast {@code timeoutNanos}: the mean hold time times {@code ahead} over
   * the limit. False while nothing has been learned.
   */
  boolean hopeless(int ahead, int limit, long timeoutNanos) {
    return meanNanos > 0 && limit > 0 && timeoutNanos != Long.MAX_VALUE
        && meanNanos * ahead / limit > timeoutNanos;
  }

  /** {@link ConcurrencyLimiter#usefulWait}: the deadline less the mean hold time. */
  Duration usefulWait(Duration deadline) {
    return meanNanos <= 0 ? deadline : deadline.minusNanos((long) meanNanos);
  }
}

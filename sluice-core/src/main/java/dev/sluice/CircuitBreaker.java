package dev.sluice;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Keeps calls away from a failing store: after {@code threshold} consecutive failures it opens
 * for {@code openNanos}; then one call is let through as a trial, which closes it on success or
 * opens it again on failure. Lock-free; a decision while open costs a volatile read.
 */
final class CircuitBreaker {
  private final int threshold;
  private final long openNanos;
  private final Clock clock;
  private final AtomicInteger failures = new AtomicInteger();
  /** When the breaker may let a trial through; Long.MIN_VALUE when closed. */
  private final AtomicLong openUntil = new AtomicLong(Long.MIN_VALUE);

  CircuitBreaker(int threshold, long openNanos, Clock clock) {
    this.threshold = threshold;
    this.openNanos = openNanos;
    this.clock = clock;
  }

  /** Whether this call may go to the store (closed, or the one trial after the open period). */
  boolean allowsCall() {
    long until = openUntil.get();
    if (until == Long.MIN_VALUE) {
      return true;
    }
    long now = clock.nanoTime();
    // one trial: the caller that moves openUntil forward goes; others stay degraded
    return now - until >= 0 && openUntil.compareAndSet(until, now + openNanos);
  }

  void success() {
    failures.set(0);
    openUntil.set(Long.MIN_VALUE);
  }

  void failure() {
    if (failures.incrementAndGet() >= threshold) {
      openUntil.set(clock.nanoTime() + openNanos);
    }
  }

  boolean isOpen() {
    return openUntil.get() != Long.MIN_VALUE;
  }

  /** Nanoseconds until the next trial; 0 when closed. */
  long remainingOpenNanos() {
    long until = openUntil.get();
    return until == Long.MIN_VALUE ? 0 : Math.max(0, until - clock.nanoTime());
  }
}

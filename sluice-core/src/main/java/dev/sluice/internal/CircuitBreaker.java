package dev.sluice.internal;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Clock;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/*
 * A circuit breaker for one failure domain of a store (see CircuitBreakerSettings).
 *
 * Closed, every call goes to the store and is counted in a ring of ten buckets covering the
 * window (calls and failures per bucket, each bucket stamped with the tick of the window it
 * counts; a stale bucket is cleared by the first call that meets it). Opening needs evidence:
 * `consecutiveUnavailable` unreachable-store failures in a row, or a failure rate at or above
 * `failureRate` over at least `minimumCalls` calls in the window. A slow answer on a busy host
 * is one failure among many successes and opens nothing.
 *
 * Open: openUntil holds the instant of the next trial; the caller that moves it forward by CAS is
 * the one trial, everyone else is answered by the failure policy. A successful trial closes the
 * breaker and clears the window; a failed one opens it again.
 *
 * Counting is approximate at bucket edges under races (a count may land in a bucket being
 * cleared); the decision to open never depends on one count.
 */
/**
 * A circuit breaker for one failure domain of a store, as {@link CircuitBreakerSettings}
 * describes; the rate and the concurrency limiters on stores share it. Not API. Thread-safe.
 */
public final class CircuitBreaker {
  private static final int BUCKETS = 10;
  private static final long CLOSED = Long.MIN_VALUE;

  private final double failureRate;
  private final int minimumCalls;
  private final int consecutiveUnavailable;
  private final long openNanos;
  private final long bucketNanos;
  private final Clock clock;
  private final AtomicLongArray stamp = new AtomicLongArray(BUCKETS);
  private final AtomicLongArray calls = new AtomicLongArray(BUCKETS);
  private final AtomicLongArray failures = new AtomicLongArray(BUCKETS);
  private final AtomicInteger unreachableInARow = new AtomicInteger();
  /** When the breaker may let a trial through; CLOSED when closed. */
  private final AtomicLong openUntil = new AtomicLong(CLOSED);

  public CircuitBreaker(CircuitBreakerSettings settings, Clock clock) {
    this.failureRate = settings.failureRate();
    this.minimumCalls = settings.minimumCalls();
    this.consecutiveUnavailable = settings.consecutiveUnavailable();
    this.openNanos = Saturating.nanos(settings.openFor());
    this.bucketNanos = Math.max(1, Saturating.nanos(settings.window()) / BUCKETS);
    this.clock = clock;
    for (int i = 0; i < BUCKETS; i++) {
      stamp.set(i, Long.MIN_VALUE);
    }
  }

  /** Whether this call may go to the store (closed, or the one trial after the open period). */
  public boolean allowsCall() {
    long until = openUntil.get();
    if (until == CLOSED) {
      return true;
    }
    long now = clock.nanoTime();
    return now - until >= 0 && openUntil.compareAndSet(until, now + openNanos);
  }

  public void success() {
    if (openUntil.get() != CLOSED) {
      // the trial succeeded: the store is back, and what failed before it no longer counts
      for (int i = 0; i < BUCKETS; i++) {
        stamp.set(i, Long.MIN_VALUE);
      }
      unreachableInARow.set(0);
      openUntil.set(CLOSED);
      return;
    }
    calls.incrementAndGet(bucket(clock.nanoTime()));
    if (unreachableInARow.get() != 0) {
      unreachableInARow.set(0);
    }
  }

  /** Counts a failed call; {@code unreachable} when the store could not be reached at all. */
  public void failure(boolean unreachable) {
    long now = clock.nanoTime();
    if (openUntil.get() != CLOSED) {
      openUntil.set(now + openNanos);   // the trial (or a call in flight when it opened) failed
      return;
    }
    int b = bucket(now);
    calls.incrementAndGet(b);
    failures.incrementAndGet(b);
    if (unreachable && unreachableInARow.incrementAndGet() >= consecutiveUnavailable) {
      openUntil.set(now + openNanos);
      return;
    }
    long tick = Math.floorDiv(now, bucketNanos);
    long n = 0;
    long failed = 0;
    for (int i = 0; i < BUCKETS; i++) {
      long s = stamp.get(i);
      if (s != Long.MIN_VALUE && tick - s < BUCKETS) {
        n += calls.get(i);
        failed += failures.get(i);
      }
    }
    if (n >= minimumCalls && failed >= failureRate * n) {
      openUntil.set(now + openNanos);
    }
  }

  /** The bucket counting calls at {@code now}, cleared first if it still counts an older tick. */
  private int bucket(long now) {
    long tick = Math.floorDiv(now, bucketNanos);
    int i = (int) Math.floorMod(tick, (long) BUCKETS);
    if (stamp.get(i) != tick) {
      synchronized (this) {
        if (stamp.get(i) != tick) {
          calls.set(i, 0);
          failures.set(i, 0);
          stamp.set(i, tick);
        }
      }
    }
    return i;
  }

  public boolean isOpen() {
    return openUntil.get() != CLOSED;
  }

  /** Nanoseconds until the next trial; 0 when closed. */
  public long remainingOpenNanos() {
    long until = openUntil.get();
    return until == CLOSED ? 0 : Math.max(0, until - clock.nanoTime());
  }
}

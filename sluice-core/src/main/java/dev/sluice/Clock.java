package dev.sluice;

import java.util.concurrent.TimeUnit;

/**
 * A source of monotonic time in nanoseconds, and the way a blocked caller waits for it.
 *
 * <p>The default, {@link #system()}, reads {@link System#nanoTime()} and parks the thread. Tests
 * and simulations inject a manual clock whose {@link #sleep(long)} advances virtual time instead
 * of sleeping. Implementations must be thread-safe. A clock may go backwards; limiters treat that
 * as no time passing.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#time">docs/semantics.md, "Time"</a>.
 */
@FunctionalInterface
public interface Clock {
  /** Nanoseconds since an arbitrary origin fixed for the clock's lifetime. */
  long nanoTime();

  /**
   * Waits at least {@code nanos} nanoseconds of this clock's time.
   *
   * @throws InterruptedException if the thread is interrupted while waiting
   */
  default void sleep(long nanos) throws InterruptedException {
    TimeUnit.NANOSECONDS.sleep(nanos);
  }

  /**
   * How long, between {@code fromNanos} and {@code toNanos} of this clock, this process could not
   * run: a pause (a GC's stop-the-world, a starved CPU, a stopped process), as far as the clock
   * knows; 0 by default. Adaptive limits do not learn from a permit held mostly through a pause:
   * its latency, and the timeout the pause caused, are the host's, not the backend's. The system
   * clock watches for pauses of 20 ms and more with one daemon thread, started on the first call.
   */
  default long pausedNanos(long fromNanos, long toNanos) {
    return 0;
  }

  /** The monotonic system clock: {@link System#nanoTime()}. */
  static Clock system() {
    return SystemClock.INSTANCE;
  }
}

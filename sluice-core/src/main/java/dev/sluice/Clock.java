package dev.sluice;

import java.util.concurrent.TimeUnit;

/**
 * A source of monotonic time in nanoseconds, and the way a blocked caller waits for it.
 *
 * <p>The default, {@link #system()}, reads {@link System#nanoTime()} and parks the thread. Tests
 * and simulations inject a manual clock whose {@link #sleep(long)} advances virtual time instead
 * of sleeping. Implementations must be thread-safe. A clock may go backwards; limiters treat that
 * as no time passing.
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

  /** The monotonic system clock: {@link System#nanoTime()}. */
  static Clock system() {
    return SystemClock.INSTANCE;
  }
}

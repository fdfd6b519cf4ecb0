package dev.sluice.internal;

import java.time.Duration;

/**
 * Long arithmetic that saturates instead of wrapping, written once for the rate and the
 * concurrency limiters and the breaker: an hour-long lease added to a clock near its end, or a
 * {@code Duration} of a thousand years, turns into "as late as can be", never into a time in the
 * past. Not API.
 */
public final class Saturating {
  private Saturating() {}

  /** {@code a + b}, or {@link Long#MAX_VALUE} / {@link Long#MIN_VALUE} where it would overflow. */
  public static long add(long a, long b) {
    long r = a + b;
    if (((a ^ r) & (b ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }

  /** The duration in nanoseconds, or {@link Long#MAX_VALUE} / {@link Long#MIN_VALUE} beyond. */
  public static long nanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException overflow) {
      return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }
}

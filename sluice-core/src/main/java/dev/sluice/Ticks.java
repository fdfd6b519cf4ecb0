package dev.sluice;

import dev.sluice.internal.Saturating;
import dev.sluice.spi.StoreRequest;
import java.time.Duration;

/**
 * Integer time. A tick is the resolution of a store's clock: one nanosecond in-process, one
 * microsecond in Redis and PostgreSQL. All arithmetic saturates at {@link #MAX} instead of
 * wrapping, so a huge capacity or a slow rate turns into "very long", never into a negative time.
 */
final class Ticks {
  /** The largest time we ever compute with; far from overflow when two of them are added. */
  static final long MAX = Long.MAX_VALUE / 4;

  /** Marks "no time yet" in a state slot (an empty bucket, no window). */
  static final long NONE = StoreRequest.NONE;

  private Ticks() {}

  /** {@code a + b}, clamped to {@code [-MAX..MAX]} for finite operands. */
  static long add(long a, long b) {
    return Saturating.add(a, b);
  }

  /** {@code max(0, a - b)} without overflow. */
  static long positiveDifference(long a, long b) {
    if (a <= b) {
      return 0;
    }
    long r = a - b;
    return r < 0 ? Long.MAX_VALUE : r;
  }

  /**
   * Quanta (steps or micro-units) for a cost of {@code units} at {@code perUnit} quanta a unit:
   * rounded up, so that rounding never favours the client, and at least one, so that a positive
   * cost is never free. A product within a hair of an integer is that integer: {@code 0.3 * 1e9}
   * is 300,000,000 even though the double product is a hair below it.
   */
  static long fromUnits(double units, double perUnit) {
    double exact = units * perUnit;
    long whole = (long) exact;
    if (whole == exact && whole >= 1 && whole < MAX) {
      return whole;   // a whole product, the usual case: what the rounding below gives, sooner
    }
    if (exact >= MAX) {
      return MAX;
    }
    double nearest = Math.rint(exact);
    long quanta = nearlyEqual(exact, nearest) ? (long) nearest : (long) Math.ceil(exact);
    return Math.max(1, quanta);
  }

  /** A capacity in quanta: like {@link #fromUnits} but rounded down, and possibly 0. */
  static long capacityFromUnits(double units, double perUnit) {
    double exact = units * perUnit;
    if (exact >= MAX) {
      return MAX;
    }
    double nearest = Math.rint(exact);
    return nearlyEqual(exact, nearest) ? (long) nearest : (long) Math.floor(exact);
  }

  private static boolean nearlyEqual(double exact, double nearest) {
    return Math.abs(exact - nearest) <= Math.max(1e-6, 4 * Math.ulp(exact));
  }

  static long toNanosSaturated(Duration duration) {
    return Math.max(-MAX, Math.min(Saturating.nanos(duration), MAX));
  }

  /** Nanoseconds in {@code ticks} of {@code ticksPerSecond}, saturating at Long.MAX_VALUE. */
  static long toNanos(long ticks, long ticksPerSecond) {
    if (ticksPerSecond == 1_000_000_000L || ticks == 0) {
      return ticks;
    }
    if (ticks >= MAX) {
      return Long.MAX_VALUE;
    }
    long factor = 1_000_000_000L / ticksPerSecond;
    long r = ticks * factor;
    return r / factor == ticks ? r : Long.MAX_VALUE;
  }

  static String formatDuration(Duration d) {
    long s = d.getSeconds();
    if (d.getNano() == 0 && s != 0) {
      if (s % 86400 == 0) {
        return (s / 86400) + "d";
      }
      if (s % 3600 == 0) {
        return (s / 3600) + "h";
      }
      if (s % 60 == 0) {
        return (s / 60) + "m";
      }
      return s + "s";
    }
    long nanos = toNanosSaturated(d);
    if (nanos % 1_000_000 == 0) {
      return (nanos / 1_000_000) + "ms";
    }
    return nanos + "ns";
  }
}

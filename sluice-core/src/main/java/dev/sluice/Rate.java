package dev.sluice;

import java.time.Duration;
import java.util.Objects;

/**
 * An amount per period, such as {@code 1.5} per second or {@code 1,000} per 30 days.
 *
 * <p>Immutable and thread-safe. The amount is any positive finite number, so fractional rates
 * are exact: {@code Rate.of(1000, Duration.ofDays(30))} is not rounded to a per-second figure.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#time">docs/semantics.md, "Time"</a>.
 */
public final class Rate {
  private final double amount;
  private final Duration period;

  private Rate(double amount, Duration period) {
    this.amount = amount;
    this.period = period;
  }

  /**
   * Returns {@code amount} units per {@code period}.
   *
   * @throws IllegalArgumentException if {@code amount} is not positive and finite, or
   *     {@code period} is not positive
   * @throws NullPointerException if {@code period} is null
   */
  public static Rate of(double amount, Duration period) {
    Objects.requireNonNull(period, "period");
    Checks.positiveFinite("rate amount", amount);
    if (period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException("rate period must be positive but was " + period);
    }
    return new Rate(amount, period);
  }

  /** Returns {@code amount} units per second. */
  public static Rate perSecond(double amount) {
    return of(amount, Duration.ofSeconds(1));
  }

  /** Returns {@code amount} units per minute. */
  public static Rate perMinute(double amount) {
    return of(amount, Duration.ofMinutes(1));
  }

  /** Returns {@code amount} units per hour. */
  public static Rate perHour(double amount) {
    return of(amount, Duration.ofHours(1));
  }

  /** Returns {@code amount} units per day. */
  public static Rate perDay(double amount) {
    return of(amount, Duration.ofDays(1));
  }

  /** The amount per {@link #period()}. */
  public double amount() {
    return amount;
  }

  /** The period the {@link #amount()} is counted over. */
  public Duration period() {
    return period;
  }

  /** The rate in units per second. */
  public double perSecond() {
    return amount / (period.getSeconds() + period.getNano() / 1e9);
  }

  /** The time one unit takes to leak, in ticks of {@code ticksPerSecond}; not rounded. */
  double ticksPerUnit(long ticksPerSecond) {
    // From seconds and nanos separately: a period beyond Long.MAX_VALUE ns stays exact enough.
    double ticks = period.getSeconds() * (double) ticksPerSecond
        + period.getNano() * (ticksPerSecond / 1e9);
    return ticks / amount;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Rate
        && ((Rate) o).amount == amount
        && ((Rate) o).period.equals(period);
  }

  @Override
  public int hashCode() {
    return Double.hashCode(amount) * 31 + period.hashCode();
  }

  /** Returns the rate as {@code amount/period}, e.g. {@code 1.5/1s} or {@code 1000/30d}. */
  @Override
  public String toString() {
    return Checks.format(amount) + "/" + Ticks.formatDuration(period);
  }
}

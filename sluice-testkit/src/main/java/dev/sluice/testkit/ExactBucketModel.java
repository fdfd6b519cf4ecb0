package dev.sluice.testkit;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;

/**
 * One leaky bucket in exact rational arithmetic, written from the documented rules alone
 * (docs/semantics.md), independently of core's integer steps: the level is a fraction of units
 * that leaks one unit every {@code period / amount} of a store's ticks, the rate and every cost
 * read as the decimals they were written as. What a store may round, the model rounds the same
 * documented way and no other: a cost is charged in whole steps of {@code 1/N} unit (rounded
 * up), the capacity is held in whole steps (rounded down), where a unit leaks in {@code N/S}
 * ticks as a reduced fraction; and a wait is reported in whole ticks, rounded up.
 *
 * <p>For a single bucket the queue ({@code reserve}) admits exactly when the meter does; its
 * delay is the time until the queue ahead of the request is empty, rounded up to a tick.
 *
 * <p>Not thread-safe: a sequential specification for one key.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ExactBucketModel {
  /** What the model decides: allowed, and the retry-after or the delay in ticks. */
  public record Outcome(boolean allowed, long retryAfterTicks, long delayTicks) {}

  private final Fraction ticksPerUnit;
  private final Fraction stepsPerUnit;
  private final Fraction capacity;
  private Fraction level = Fraction.ZERO;
  private long at = Long.MIN_VALUE;

  /**
   * A bucket of {@code capacity} units leaking {@code amount} per {@code period} on a store whose
   * clock ticks {@code ticksPerSecond} times a second.
   */
  public ExactBucketModel(double capacity, double amount, Duration period, long ticksPerSecond) {
    Fraction periodTicks = Fraction.of(BigDecimal.valueOf(period.getSeconds())
        .add(BigDecimal.valueOf(period.getNano(), 9))
        .multiply(BigDecimal.valueOf(ticksPerSecond)));
    this.ticksPerUnit = periodTicks.divide(decimal(amount));
    this.stepsPerUnit = Fraction.of(new BigDecimal(ticksPerUnit.num));   // N of N/S, reduced
    this.capacity = floorToSteps(decimal(capacity));
  }

  /** The double as the decimal it was written as (its shortest representation). */
  static Fraction decimal(double x) {
    return Fraction.of(new BigDecimal(Double.toString(x)));
  }

  private Fraction floorToSteps(Fraction units) {
    Fraction steps = units.multiply(stepsPerUnit);
    BigInteger[] qr = steps.num.divideAndRemainder(steps.den);
    return Fraction.of(qr[0].longValueExact()).divide(stepsPerUnit);
  }

  /** A cost as charged: whole steps, rounded up, at least one. */
  Fraction charged(double cost) {
    long steps = Math.max(1, decimal(cost).multiply(stepsPerUnit).ceil());
    return Fraction.of(steps).divide(stepsPerUnit);
  }

  private void advance(long now) {
    if (at != Long.MIN_VALUE && now > at) {
      Fraction leaked = Fraction.of(now - at).divide(ticksPerUnit);
      level = level.subtract(leaked).max(Fraction.ZERO);
    }
    at = Math.max(at, now);
  }

  /** The meter at {@code now} (ticks): admit iff the level plus the cost stays within capacity. */
  public Outcome tryAcquire(double cost, long now) {
    return decide(cost, now, true, false);
  }

  /** The same answer, changing nothing. */
  public Outcome check(double cost, long now) {
    return decide(cost, now, false, false);
  }

  /** The queue: admitted as the meter is, with the delay until the queue ahead is empty. */
  public Outcome reserve(double cost, long now) {
    return decide(cost, now, true, true);
  }

  private Outcome decide(double cost, long now, boolean charge, boolean queue) {
    advance(now);
    Fraction c = charged(cost);
    if (c.compareTo(capacity) > 0) {
      return new Outcome(false, Long.MAX_VALUE, 0);
    }
    Fraction after = level.add(c);
    if (after.compareTo(capacity) <= 0) {
      long delay = queue ? level.multiply(ticksPerUnit).ceil() : 0;
      if (charge) {
        level = after;
      }
      return new Outcome(true, 0, delay);
    }
    return new Outcome(false, after.subtract(capacity).multiply(ticksPerUnit).ceil(), 0);
  }

  /** The level now, in units. */
  public double level() {
    return level.doubleValue();
  }
}

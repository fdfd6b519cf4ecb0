package dev.sluice;

import dev.sluice.spi.StoreProtocol;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.Locale;

/**
 * A {@link Limit} turned into integers for a clock of a given resolution. Immutable.
 *
 * <p>Buckets are kept in <em>steps</em>: {@code 1/scale} of a tick, with {@code scale} the
 * smallest whole number that makes one unit of cost a whole number of steps (the denominator of
 * the rate's unit in ticks, as an exact fraction of the decimal the rate was given in). 1.5/s
 * on a nanosecond clock: a unit is 666,666,666⅔ ns, so scale 3 and a unit is 2,000,000,000
 * steps; 1,000/s: scale 1, 1,000,000 steps. Every cost with that precision, and so every whole
 * cost, is charged exactly, and costs that add up to the capacity fill it exactly. A cost finer
 * than a step is rounded up to the next step; a capacity, down: rounding never favours the
 * client. Window counts are kept in micro-units of cost, rounded the same way.
 *
 * <p>Should the exact scale make the capacity too large for the store's arithmetic (2^51 steps in
 * Redis and PostgreSQL, whose scripts compute in doubles; 2^60 in memory), the largest scale
 * that fits is used and a unit of cost is rounded up to a whole number of its steps; a limit
 * whose unit would then be charged more than 0.1% too much is refused.
 */
final class CompiledLimit {
  /** Kind codes: StoreProtocol.Kind's (ProtocolCodesTest compares). */
  static final int BUCKET = 0;
  static final int FIXED = 1;
  static final int SLIDING = 2;

  /** Window counts are kept in millionths of a unit. */
  static final double MICRO_UNITS = 1e6;

  /**
   * The largest backlog a bucket on a store computes with, in steps (2^52): with the capacity
   * and the penalty below it, every sum a script forms stays exact in doubles (below 2^53).
   */
  static final long STORE_BIG = StoreProtocol.SCRIPT_BIG;

  /**
   * The largest relative error of the charge for one unit of cost that a bucket accepts (0.1%),
   * when its exact scale does not fit.
   */
  static final double MAX_UNIT_ERROR = 1e-3;

  final Limit limit;
  final int kind;
  final long ticksPerSecond;
  /** Buckets: steps one unit of cost takes to leak. Windows: micro-units per unit. */
  final double quantaPerUnit;
  /** Buckets: steps per tick (1 when a unit is a whole number of ticks). Windows: 1. */
  final long scale;
  /** Buckets: the backlog at which arithmetic saturates, in steps. */
  final long big;
  /** Buckets: {@code big / scale}, the saturating backlog in ticks (no division per decision). */
  final long bigTicks;
  /** Buckets: the capacity in steps. Windows: the limit in micro-units. */
  final long capacity;
  /** Window length in ticks; 0 for buckets. */
  final long window;
  /** Buckets: the penalty in steps. Windows: in ticks. 0 for none. */
  final long penalty;
  /** Number of state slots: bucket 1 [E] or, when scale > 1, 2 [E, R]; fixed 3; sliding 4. */
  final int slots;
  /** The quantum of a cost of 1, precomputed for the default cost. */
  final long unitCost;
  /** The rules of this limit's kind. */
  final Rules rules;

  /**
   * The longest time a window or a penalty may span, in ticks: Ticks.MAX in-process; 2^51 for
   * coarser stores, whose scripts compute in doubles.
   */
  static long maxTicks(long ticksPerSecond) {
    return ticksPerSecond == 1_000_000_000L ? Ticks.MAX : 1L << 51;
  }

  CompiledLimit(Limit limit, long ticksPerSecond) {
    this.limit = limit;
    this.ticksPerSecond = ticksPerSecond;
    long max = maxTicks(ticksPerSecond);
    long penaltyTicks =
        Math.min(max, ticks(Ticks.toNanosSaturated(limit.penalty()), ticksPerSecond));
    switch (limit.algorithm()) {
      case FIXED_WINDOW:
      case SLIDING_WINDOW:
        this.kind = limit.algorithm() == Algorithm.FIXED_WINDOW ? FIXED : SLIDING;
        this.quantaPerUnit = MICRO_UNITS;
        this.scale = 1;
        this.big = max;
        this.bigTicks = max;
        this.window = Math.min(max,
            Math.max(1, ticks(Ticks.toNanosSaturated(limit.windowOrNull()), ticksPerSecond)));
        this.slots = kind == FIXED ? StoreProtocol.FIXED_WINDOW_SLOTS : StoreProtocol.SLIDING_WINDOW_SLOTS;
        this.capacity = Ticks.capacityFromUnits(limit.capacity(), MICRO_UNITS);
        this.penalty = penaltyTicks;
        this.unitCost = Ticks.fromUnits(1, MICRO_UNITS);
        this.rules = Rules.of(kind);
        return;
      default:
        break;
    }
    this.kind = BUCKET;
    this.rules = BucketRules.INSTANCE;
    this.window = 0;
    this.big = ticksPerSecond == 1_000_000_000L ? Ticks.MAX : STORE_BIG;
    long half = big / 2;
    double ticksPerUnit = limit.rate().ticksPerUnit(ticksPerSecond);
    double drainTicks = limit.capacity() * ticksPerUnit;
    if (!(drainTicks < half)) {
      throw new IllegalArgumentException(String.format(Locale.ROOT,
          "%s: a full bucket takes %.3g years to drain; the most a store can represent is %d years"
              + " (raise the rate or lower the capacity)",
          limit.name(), drainTicks / ticksPerSecond / 31_557_600d,
          half / ticksPerSecond / 31_557_600L));
    }
    if (drainTicks < 1) {
      throw new IllegalArgumentException(String.format(Locale.ROOT,
          "%s: a full bucket drains in less than one tick of the store's clock (1/%d s);"
              + " raise the capacity", limit.name(), ticksPerSecond));
    }
    // One unit in ticks as an exact fraction num/den: the scale is den, a unit is num steps.
    BigInteger[] unit = exactTicksPerUnit(limit.rate(), ticksPerSecond);
    BigInteger[] cap = Rationals.of(limit.capacity());
    long s;
    long u;
    if (fits(unit[1], half) && fits(unit[0], half)
        && fits(unit[0].multiply(cap[0]).divide(cap[1]), half)) {
      s = unit[1].longValueExact();
      u = unit[0].longValueExact();
    } else {
      // The exact scale is too fine for this capacity: the largest that fits, the unit rounded
      // up to whole steps (never in the client's favour), refused if that is off by more than
      // MAX_UNIT_ERROR.
      s = Math.max(1, (long) Math.min(unit[1].doubleValue(), half / drainTicks));
      BigInteger[] qr = unit[0].multiply(BigInteger.valueOf(s)).divideAndRemainder(unit[1]);
      u = qr[0].longValueExact() + (qr[1].signum() == 0 ? 0 : 1);
      double exact = ticksPerUnit * s;
      if (u - exact > MAX_UNIT_ERROR * exact) {
        throw new IllegalArgumentException(String.format(Locale.ROOT,
            "%s: one unit of cost leaks in %.6g ticks of the store's clock (1/%d s), which it can"
                + " only charge as %d/%d, exceeding the limit by %.1f%%; choose a rate whose unit"
                + " of cost is a simpler fraction of a tick or a smaller capacity, or keep the"
                + " limit in memory", limit.name(), ticksPerUnit, ticksPerSecond, u, s,
            (u / exact - 1) * 100));
      }
    }
    this.scale = s;
    this.bigTicks = big / s;
    this.quantaPerUnit = u;
    this.unitCost = u;
    this.capacity = BigInteger.valueOf(u).multiply(cap[0]).divide(cap[1]).longValueExact();
    this.slots = s == 1 ? StoreProtocol.BUCKET_SLOTS : StoreProtocol.SCALED_BUCKET_SLOTS;
    // A held bucket is capacity + penalty steps; one step of rounding stays below big.
    this.penalty = penaltyTicks > (big - capacity - s) / s ? big - capacity - s : penaltyTicks * s;
  }

  /** This bucket with a lower capacity, in steps (a group's parent as borrowers see it). */
  CompiledLimit withCapacity(long steps) {
    return new CompiledLimit(this, steps);
  }

  private CompiledLimit(CompiledLimit base, long capacity) {
    this.limit = base.limit;
    this.kind = base.kind;
    this.ticksPerSecond = base.ticksPerSecond;
    this.quantaPerUnit = base.quantaPerUnit;
    this.scale = base.scale;
    this.big = base.big;
    this.bigTicks = base.bigTicks;
    this.capacity = capacity;
    this.window = base.window;
    this.penalty = base.penalty;
    this.slots = base.slots;
    this.unitCost = base.unitCost;
    this.rules = base.rules;
  }

  private static boolean fits(BigInteger v, long bound) {
    return v.bitLength() < 63 && v.longValue() <= bound;
  }

  /**
   * The ticks one unit of the rate takes to leak, as a reduced fraction {num, den}: period in
   * ticks times the amount's denominator over its numerator, the amount read as the decimal
   * (or simple fraction) it was written as.
   */
  static BigInteger[] exactTicksPerUnit(Rate rate, long ticksPerSecond) {
    BigInteger[] amount = Rationals.of(rate.amount());
    BigInteger periodNanos = BigInteger.valueOf(rate.period().toSeconds())
        .multiply(BigInteger.valueOf(1_000_000_000L))
        .add(BigInteger.valueOf(rate.period().toNanosPart()));
    BigInteger nanosPerTick = BigInteger.valueOf(1_000_000_000L / ticksPerSecond);
    BigInteger num = periodNanos.multiply(amount[1]);
    BigInteger den = nanosPerTick.multiply(amount[0]);
    BigInteger g = num.gcd(den);
    return new BigInteger[] {num.divide(g), den.divide(g)};
  }

  private static long ticks(long nanos, long ticksPerSecond) {
    return ticksPerSecond == 1_000_000_000L ? nanos : nanos / (1_000_000_000L / ticksPerSecond);
  }

  /** The quantum (steps or micro-units) of a cost that has already been validated. */
  long quantum(double cost) {
    return cost == 1.0 ? unitCost : Ticks.fromUnits(cost, quantaPerUnit);
  }

  /** Units of cost in a number of quanta. */
  double units(double quanta) {
    return quanta / quantaPerUnit;
  }

  long nanos(long ticks) {
    return Ticks.toNanos(ticks, ticksPerSecond);
  }

  /** Exact fractions of the doubles users write as decimals. */
  static final class Rationals {
    private Rationals() {}

    /**
     * The simplest fraction {num, den} within half an ulp of {@code x} (positive, finite): the
     * decimal or fraction the double was written as (1.5 is 3/2, 0.1 is 1/10, 1/3.0 is 1/3),
     * found by continued fractions over the double's exact value.
     */
    static BigInteger[] of(double x) {
      BigDecimal exact = new BigDecimal(x);
      BigDecimal tolerance = new BigDecimal(Math.ulp(x)).divide(BigDecimal.valueOf(2));
      BigInteger n = exact.unscaledValue();
      BigInteger d = BigInteger.TEN.pow(Math.max(0, exact.scale()));
      if (exact.scale() < 0) {
        n = n.multiply(BigInteger.TEN.pow(-exact.scale()));
      }
      // convergents h/k of n/d
      BigInteger h0 = BigInteger.ZERO;
      BigInteger h1 = BigInteger.ONE;
      BigInteger k0 = BigInteger.ONE;
      BigInteger k1 = BigInteger.ZERO;
      BigInteger a = n;
      BigInteger b = d;
      while (b.signum() != 0) {
        BigInteger[] qr = a.divideAndRemainder(b);
        BigInteger h2 = qr[0].multiply(h1).add(h0);
        BigInteger k2 = qr[0].multiply(k1).add(k0);
        h0 = h1;
        h1 = h2;
        k0 = k1;
        k1 = k2;
        a = b;
        b = qr[1];
        BigDecimal approx = new BigDecimal(h1).divide(new BigDecimal(k1), 40,
            RoundingMode.HALF_EVEN);
        if (approx.subtract(exact).abs().compareTo(tolerance) <= 0) {
          break;
        }
      }
      BigInteger g = h1.gcd(k1);
      return new BigInteger[] {h1.divide(g), k1.divide(g)};
    }
  }
}

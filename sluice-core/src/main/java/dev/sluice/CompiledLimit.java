package dev.sluice;

/**
 * A {@link Limit} turned into integers for a clock of a given resolution. Bucket costs become
 * ticks of leak time; window costs become micro-units. Immutable.
 */
final class CompiledLimit {
  static final int BUCKET = 0;
  static final int FIXED = 1;
  static final int SLIDING = 2;

  /** Window counts are kept in millionths of a unit. */
  static final double MICRO_UNITS = 1e6;

  final Limit limit;
  final int kind;
  final long ticksPerSecond;
  /** Buckets: ticks one unit takes to leak. Windows: micro-units per unit. */
  final double quantaPerUnit;
  /** Buckets: the capacity as ticks of leak time. Windows: the limit in micro-units. */
  final long capacity;
  /** Window length in ticks; 0 for buckets. */
  final long window;
  /** Penalty in ticks; 0 for none. */
  final long penalty;
  /** Number of state slots: bucket 1 (empty-at), fixed 3 (start, count, blocked), sliding 4. */
  final int slots;
  /** The quantum of a cost of 1, precomputed for the default cost. */
  final long unitCost;

  /**
   * The longest time a limit may span, in ticks: Ticks.MAX in-process; 2^51 for coarser stores,
   * whose scripts compute in doubles, so that now + capacity + penalty stays exact below 2^53.
   */
  static long maxTicks(long ticksPerSecond) {
    return ticksPerSecond == 1_000_000_000L ? Ticks.MAX : 1L << 51;
  }

  CompiledLimit(Limit limit, long ticksPerSecond) {
    this.limit = limit;
    this.ticksPerSecond = ticksPerSecond;
    long max = maxTicks(ticksPerSecond);
    this.penalty = Math.min(max, ticks(Ticks.toNanosSaturated(limit.penalty()), ticksPerSecond));
    switch (limit.algorithm()) {
      case FIXED_WINDOW:
      case SLIDING_WINDOW:
        this.kind = limit.algorithm() == Algorithm.FIXED_WINDOW ? FIXED : SLIDING;
        this.quantaPerUnit = MICRO_UNITS;
        this.window = Math.min(max,
            Math.max(1, ticks(Ticks.toNanosSaturated(limit.windowOrNull()), ticksPerSecond)));
        this.slots = kind == FIXED ? 3 : 4;
        break;
      default:
        this.kind = BUCKET;
        this.quantaPerUnit = limit.rate().ticksPerUnit(ticksPerSecond);
        this.window = 0;
        this.slots = 1;
    }
    double exactCapacity = limit.capacity() * quantaPerUnit;
    if (kind == BUCKET && !(exactCapacity < max)) {
      throw new IllegalArgumentException(String.format(
          "%s: a full bucket takes %.3g years to drain; the most a store can represent is %d years"
              + " (raise the rate or lower the capacity)",
          limit.name(), exactCapacity / ticksPerSecond / 31_557_600d,
          max / ticksPerSecond / 31_557_600L));
    }
    if (kind == BUCKET && exactCapacity < 1) {
      throw new IllegalArgumentException(String.format(
          "%s: a full bucket drains in less than one tick of the store's clock (1/%d s);"
              + " raise the capacity", limit.name(), ticksPerSecond));
    }
    this.capacity = Ticks.fromUnits(limit.capacity(), quantaPerUnit);
    this.unitCost = Ticks.fromUnits(1, quantaPerUnit);
    if (kind == BUCKET && Math.abs(unitCost - quantaPerUnit) > MAX_UNIT_ERROR * quantaPerUnit) {
      // Costs are whole ticks of leak time; a unit that is not close to a whole number of ticks
      // would be charged off by up to half (300,000/s on a microsecond clock: 3 µs for 3.33,
      // admitting 11% more than the limit). Refused rather than silently wrong.
      throw new IllegalArgumentException(String.format(java.util.Locale.ROOT,
          "%s: one unit of cost leaks in %.4g ticks of the store's clock (1/%d s), which it would"
              + " charge as %d, %s the limit by %.1f%%; choose a rate whose unit of cost takes a"
              + " whole number of ticks (for a microsecond clock: 1,000,000/s divided by a whole"
              + " number), or keep the limit in memory", limit.name(), quantaPerUnit,
          ticksPerSecond, unitCost, unitCost < quantaPerUnit ? "exceeding" : "falling short of",
          Math.abs(quantaPerUnit / unitCost - 1) * 100));
    }
  }

  /**
   * The largest relative error of the charge for one unit of cost that a bucket accepts (0.1%):
   * a unit of at least 1,000 ticks, or an exact whole number of ticks.
   */
  static final double MAX_UNIT_ERROR = 1e-3;

  private static long ticks(long nanos, long ticksPerSecond) {
    return ticksPerSecond == 1_000_000_000L ? nanos : nanos / (1_000_000_000L / ticksPerSecond);
  }

  /** The quantum (ticks or micro-units) of a cost that has already been validated. */
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
}

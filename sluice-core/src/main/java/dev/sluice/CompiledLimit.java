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
  }

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

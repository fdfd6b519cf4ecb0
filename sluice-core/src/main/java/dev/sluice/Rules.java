package dev.sluice;

/*
 * One limit kind's rules on its own state slots (StoreProtocol describes them). Engine applies an
 * operation across a key's limits; a Rules answers for one limit: does a cost fit, what state
 * does a charge, a fill or a penalty leave, and the figures a decision reports.
 *
 * The same rules exist in decide.lua and in the PostgreSQL decide function, in sections of the
 * same names in the same order (bucket, fixed window, sliding window), so that one rule can be
 * read side by side in three languages. Golden vectors (sluice-testkit) hold the copies equal.
 *
 * Adding a kind: a new Rules here, a code and a letter in StoreProtocol.Kind, a section in the
 * script and the function, and a limit set in GoldenVectors (docs/architecture.md).
 */
abstract class Rules {
  /** The rules of a kind code. */
  static Rules of(int kind) {
    switch (kind) {
      case CompiledLimit.BUCKET:
        return BucketRules.INSTANCE;
      case CompiledLimit.FIXED:
        return FixedWindowRules.INSTANCE;
      default:
        return SlidingWindowRules.INSTANCE;
    }
  }

  /** Writes the state of a limit nobody has touched into s[o..]. */
  abstract void initialize(CompiledLimit l, long[] s, int o);

  /** Whether a cost of {@code q} quanta fits at {@code now}. */
  abstract boolean fits(CompiledLimit l, long[] s, int o, long now, long q);

  /** Writes the state after admitting {@code q} (reserve charges buckets in Engine.decide). */
  abstract void charge(CompiledLimit l, long[] s, int o, long now, long q, long[] next);

  /** Writes the state after an unconditional charge clamped at capacity; returns whether capacity was reached. */
  abstract boolean fill(CompiledLimit l, long[] s, int o, long now, long q, long[] next);

  /**
   * Starts the limit's penalty (it has one), unless one is already in force: rejections during a
   * penalty do not extend it.
   */
  abstract void penalize(CompiledLimit l, long[] s, int o, long now, long[] next);

  /** Ticks until {@code q} would fit, or {@link Engine#NEVER}; q is at most the capacity. */
  abstract long retryAfter(CompiledLimit l, long[] s, int o, long now, long q);

  /** Ticks until the limit holds nothing. */
  abstract long resetAfter(CompiledLimit l, long[] s, int o, long now);

  /** Remaining quanta (capacity less what is held), never negative. */
  abstract double remaining(CompiledLimit l, long[] s, int o, long now);

  /**
   * A window's penalty: records the end of the block in slot {@code blockedUntil} (an offset from
   * {@code o}), unless a block is in force. Both windows keep their block this way.
   */
  static void block(CompiledLimit l, long[] s, int o, int blockedUntil, long now, long[] next) {
    if (blockedFor(s[o + blockedUntil], now) == 0) {
      next[o + blockedUntil] = Ticks.add(now, l.penalty);
    }
  }

  /** Ticks a block that ends at {@code blockedUntil} still lasts at {@code now}. */
  static long blockedFor(long blockedUntil, long now) {
    return blockedUntil == Ticks.NONE ? 0 : Ticks.positiveDifference(blockedUntil, now);
  }
}

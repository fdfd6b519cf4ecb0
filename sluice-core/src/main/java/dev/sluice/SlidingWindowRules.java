package dev.sluice;

import static dev.sluice.spi.StoreProtocol.SLIDING_BLOCKED_UNTIL;
import static dev.sluice.spi.StoreProtocol.SLIDING_CURRENT;
import static dev.sluice.spi.StoreProtocol.SLIDING_PREVIOUS;
import static dev.sluice.spi.StoreProtocol.SLIDING_START;

/*
 * Sliding-window counter: state [start, previous, current, blockedUntil], start the aligned start
 * of the current window, counts in micro-units. The estimate weighs the previous window by the
 * share of it still in view.
 */
final class SlidingWindowRules extends Rules {
  static final SlidingWindowRules INSTANCE = new SlidingWindowRules();

  private SlidingWindowRules() {}

  /** Start of the aligned window holding {@code now}. */
  private static long alignedStart(CompiledLimit l, long now) {
    return Math.floorDiv(now, l.window) * l.window;
  }

  /** Writes (start, previous, current) rolled forward to now's window into out[p..p+2]. */
  private static void roll(CompiledLimit l, long[] s, int o, long now, long[] out, int p) {
    long start = s[o + SLIDING_START];
    long k = alignedStart(l, now);
    if (start == Ticks.NONE || k > Ticks.add(start, l.window)) {
      out[p + SLIDING_START] = k;
      out[p + SLIDING_PREVIOUS] = 0;
      out[p + SLIDING_CURRENT] = 0;
    } else if (k == Ticks.add(start, l.window)) {
      out[p + SLIDING_START] = k;
      out[p + SLIDING_PREVIOUS] = s[o + SLIDING_CURRENT];
      out[p + SLIDING_CURRENT] = 0;
    } else {
      // same window, or time went back into an older window: no time passes
      out[p + SLIDING_START] = start;
      out[p + SLIDING_PREVIOUS] = s[o + SLIDING_PREVIOUS];
      out[p + SLIDING_CURRENT] = s[o + SLIDING_CURRENT];
    }
  }

  /**
   * The sliding estimate plus q, in micro-units, defined in IEEE-754 doubles with exactly this
   * order of operations (every store computes the same expression): prev * (W - elapsed) / W +
   * (curr + q).
   */
  static double estimate(CompiledLimit l, long[] s, int o, long now, long q) {
    long start = s[o + SLIDING_START];
    long prev;
    long curr;
    long k = alignedStart(l, now);
    if (start == Ticks.NONE || k > Ticks.add(start, l.window)) {
      return (double) q;
    } else if (k == Ticks.add(start, l.window)) {
      prev = s[o + SLIDING_CURRENT];
      curr = 0;
      start = k;
    } else {
      prev = s[o + SLIDING_PREVIOUS];
      curr = s[o + SLIDING_CURRENT];
    }
    long elapsed = Math.max(0, Math.min(l.window, now - start));
    double weighted = (double) prev * (double) (l.window - elapsed) / (double) l.window;
    return weighted + (double) (curr + q);
  }

  private static boolean estimateFits(CompiledLimit l, long[] s, int o, long now, long q) {
    return estimate(l, s, o, now, q) <= (double) l.capacity;
  }

  @Override
  void initialize(CompiledLimit l, long[] s, int o) {
    s[o + SLIDING_START] = Ticks.NONE;
    s[o + SLIDING_PREVIOUS] = 0;
    s[o + SLIDING_CURRENT] = 0;
    s[o + SLIDING_BLOCKED_UNTIL] = Ticks.NONE;
  }

  @Override
  boolean fits(CompiledLimit l, long[] s, int o, long now, long q) {
    return blockedFor(s[o + SLIDING_BLOCKED_UNTIL], now) == 0 && estimateFits(l, s, o, now, q);
  }

  @Override
  void charge(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    roll(l, s, o, now, next, o);
    next[o + SLIDING_CURRENT] += q;
  }

  @Override
  boolean fill(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    boolean reached = !estimateFits(l, s, o, now, q) || estimate(l, s, o, now, q) >= l.capacity;
    roll(l, s, o, now, next, o);
    long curr = next[o + SLIDING_CURRENT];
    next[o + SLIDING_CURRENT] = Math.max(curr, Math.min(l.capacity, curr + q));
    return reached;
  }

  /** Records the end of the block. */
  @Override
  void penalize(CompiledLimit l, long[] s, int o, long now, long[] next) {
    block(l, s, o, SLIDING_BLOCKED_UNTIL, now, next);
  }

  @Override
  long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    long from = Ticks.add(now, blockedFor(s[o + SLIDING_BLOCKED_UNTIL], now));
    if (estimateFits(l, s, o, from, q)) {
      return from - now;
    }
    // The estimate never rises with time, and is zero two windows after the last start:
    // search for the first tick at which q fits.
    long lo = from;
    long hi = Ticks.add(Math.max(s[o + SLIDING_START], alignedStart(l, from)), 2 * l.window);
    while (lo + 1 < hi) {
      long mid = lo + (hi - lo) / 2;
      if (estimateFits(l, s, o, mid, q)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi - now;
  }

  @Override
  long resetAfter(CompiledLimit l, long[] s, int o, long now) {
    long blocked = blockedFor(s[o + SLIDING_BLOCKED_UNTIL], now);
    long[] r = new long[3];
    roll(l, s, o, now, r, 0);
    long start = r[SLIDING_START];
    long end = r[SLIDING_CURRENT] > 0 ? Ticks.add(start, 2 * l.window)
        : r[SLIDING_PREVIOUS] > 0 ? Ticks.add(start, l.window) : now;
    return Math.max(blocked, Ticks.positiveDifference(end, now));
  }

  @Override
  double remaining(CompiledLimit l, long[] s, int o, long now) {
    return blockedFor(s[o + SLIDING_BLOCKED_UNTIL], now) > 0 ? 0
        : Math.max(0, l.capacity - estimate(l, s, o, now, 0));
  }
}

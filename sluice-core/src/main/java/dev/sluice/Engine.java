package dev.sluice;

import dev.sluice.spi.StoreProtocol;
import java.util.List;

/*
 * The algorithms, as pure functions of (state, now, operation, cost).
 *
 * State. Every limit owns a few long slots in one array per key:
 *   bucket   [E] or [E, R]              E: the instant the bucket is empty (NONE: never filled),
 *                                        rounded up to a tick; R: steps it was rounded by
 *   fixed    [start, count, blocked]    window start (NONE: no window), count in micro-units,
 *                                        end of a penalty (NONE: none)
 *   sliding  [start, prev, curr, blocked] start of the aligned current window
 * Times are ticks of the store's clock. A bucket counts in steps, 1/scale of a tick, so that a
 * unit of cost is a whole number of steps (CompiledLimit): its backlog at t is
 * scale * (E - t) - R steps while E > t, else 0; its level is backlog / stepsPerUnit units. The
 * second slot exists only when scale > 1 (R is always 0 otherwise). Every quantity is relative
 * to now, never an absolute time times the scale, so that it stays small (Lua computes in
 * doubles). Leaky bucket, token bucket (tokens = C - L) and GCRA (E is GCRA's theoretical
 * arrival time) are this same function.
 *
 * Operations. tryAcquire admits iff every limit admits; then every limit is charged, otherwise
 * nothing changes except that rejecting limits with a penalty start it. check decides the same
 * and changes nothing. fillUp charges every limit unconditionally, clamped at capacity, and
 * reports whether capacity was reached. reserve (buckets only) departs at the instant every
 * limit's queue is empty, s = max(now, E_i), charges E_i = s + c_i, and admits iff every limit
 * then holds at most its capacity.
 *
 * Figures (remaining, retry-after, reset-after) are derived from the state after the operation,
 * so a store that only reports the state it saw can have its decision rebuilt here exactly.
 *
 * Concurrency: none here. Callers apply decide() atomically per key (a CAS or a lock in memory,
 * a script in Redis, a statement in PostgreSQL).
 */
final class Engine {
  static final int TRY_ACQUIRE = StoreProtocol.OP_TRY_ACQUIRE;
  static final int CHECK = StoreProtocol.OP_CHECK;
  static final int FILL_UP = StoreProtocol.OP_FILL_UP;
  static final int RESERVE = StoreProtocol.OP_RESERVE;

  static final long NEVER = Long.MAX_VALUE;

  private Engine() {}

  /** Whether every limit has a leak rate, so that reserve() applies. */
  static boolean canReserve(CompiledLimit[] limits) {
    for (CompiledLimit l : limits) {
      if (l.kind != CompiledLimit.BUCKET) {
        return false;
      }
    }
    return true;
  }

  /** A fresh state array for these limits: every bucket empty, no windows. */
  static long[] initialState(CompiledLimit[] limits) {
    int n = 0;
    for (CompiledLimit l : limits) {
      n += l.slots;
    }
    long[] state = new long[n];
    int o = 0;
    for (CompiledLimit l : limits) {
      state[o] = Ticks.NONE;
      if (l.kind != CompiledLimit.BUCKET) {
        state[o + l.slots - 1] = Ticks.NONE;
      }
      o += l.slots;
    }
    return state;
  }

  /**
   * Decides {@code op} at {@code now}; writes the state to keep into {@code next} (same length as
   * {@code state}, may not be the same array) and returns the decision.
   */
  static Decision decide(CompiledLimit[] limits, long[] state, long now, int op, double cost,
      long[] next) {
    System.arraycopy(state, 0, next, 0, state.length);
    int n = limits.length;
    long[] quanta = new long[n];
    boolean[] fits = new boolean[n];
    boolean all = true;
    long departure = now;
    if (op == RESERVE) {
      for (CompiledLimit l : limits) {
        if (l.kind != CompiledLimit.BUCKET) {
          throw new UnsupportedOperationException(
              "reserve() shapes output to a leak rate, and limit '" + l.limit.name() + "' ("
                  + l.limit.algorithm().id() + ") has none: use tryAcquire() or acquire()");
        }
      }
      int o = 0;
      for (CompiledLimit l : limits) {
        departure = Math.max(departure, state[o]);
        o += l.slots;
      }
    }
    int o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      quanta[i] = l.quantum(cost);
      if (op == RESERVE) {
        fits[i] = Ticks.add(steps(l, departure - now), quanta[i]) <= l.capacity;
      } else {
        fits[i] = fits(l, state, o, now, quanta[i]);
      }
      all &= fits[i];
      o += l.slots;
    }

    boolean reached = false;
    boolean[] full = new boolean[n];
    o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      long q = quanta[i];
      if (op == FILL_UP) {
        full[i] = fill(l, state, o, now, q, next);
        reached |= full[i];
      } else if (op != CHECK) {
        if (all) {
          charge(l, state, o, now, q, op == RESERVE ? departure : now, next);
        } else if (!fits[i] && q <= l.capacity) {
          penalize(l, state, o, now, next);
        }
      }
      o += l.slots;
    }

    boolean allowed = op == FILL_UP ? !reached : all;
    long delay = op == RESERVE && allowed ? departure - now : 0;
    return figures(limits, next, now, quanta, op == FILL_UP ? negate(full) : fits, allowed,
        reached, delay, op == FILL_UP);
  }

  // ---------------------------------------------------------------- per-algorithm decisions

  /** Ticks of leak time in a bucket of scale 1 that empties at {@code e}, as seen at {@code now}. */
  static long backlog(long e, long now) {
    return e == Ticks.NONE ? 0 : Ticks.positiveDifference(e, now);
  }

  /** A bucket's backlog at {@code now} in steps: 0 when empty, at most {@code l.big}. */
  static long backlog(CompiledLimit l, long[] s, int o, long now) {
    long e = s[o];
    if (e == Ticks.NONE || e <= now) {
      return 0;
    }
    long d = Ticks.positiveDifference(e, now);
    if (d > l.big / l.scale) {
      return l.big;
    }
    // A remainder written under another scale (the limit changed) counts as less than a tick.
    return d * l.scale - (l.scale == 1 ? 0 : Math.min(s[o + 1], l.scale - 1));
  }

  /** {@code ticks} in steps of limit l, saturating at {@code l.big}. */
  static long steps(CompiledLimit l, long ticks) {
    return ticks > l.big / l.scale ? l.big : ticks * l.scale;
  }

  /** Ticks for {@code steps} of limit l, rounded up. */
  static long ticksUp(CompiledLimit l, long steps) {
    return l.scale == 1 ? steps : (steps + l.scale - 1) / l.scale;
  }

  /**
   * Writes a bucket that holds {@code steps} (at least 0) at {@code now}: E = now + the steps
   * in ticks rounded up, R = the steps that rounding added.
   */
  static void hold(CompiledLimit l, long[] next, int o, long now, long steps) {
    long t = ticksUp(l, steps);
    next[o] = Ticks.add(now, t);
    if (l.scale != 1) {
      next[o + 1] = t * l.scale - steps;
    }
  }

  private static boolean fits(CompiledLimit l, long[] s, int o, long now, long q) {
    switch (l.kind) {
      case CompiledLimit.BUCKET:
        return Ticks.add(backlog(l, s, o, now), q) <= l.capacity;
      case CompiledLimit.FIXED:
        return blockedFor(s[o + 2], now) == 0 && fixedCount(l, s, o, now) + q <= l.capacity;
      default:
        return blockedFor(s[o + 3], now) == 0 && slidingFits(l, s, o, now, q);
    }
  }

  private static void charge(CompiledLimit l, long[] s, int o, long now, long q, long departure,
      long[] next) {
    switch (l.kind) {
      case CompiledLimit.BUCKET:
        hold(l, next, o, now,
            Ticks.add(Math.max(backlog(l, s, o, now), steps(l, departure - now)), q));
        break;
      case CompiledLimit.FIXED:
        if (fixedExpired(l, s[o], now)) {
          next[o] = now;
          next[o + 1] = q;
        } else {
          next[o + 1] = s[o + 1] + q;
        }
        break;
      default:
        roll(l, s, o, now, next);
        next[o + 2] += q;
    }
  }

  /** Unconditional charge clamped at capacity; returns whether capacity was reached. */
  private static boolean fill(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    boolean reached;
    switch (l.kind) {
      case CompiledLimit.BUCKET: {
        long b = backlog(l, s, o, now);
        long filled = Ticks.add(b, q);
        reached = filled >= l.capacity;
        hold(l, next, o, now, Math.max(b, Math.min(l.capacity, filled)));
        break;
      }
      case CompiledLimit.FIXED: {
        long count = fixedCount(l, s, o, now);
        reached = count + q >= l.capacity;
        if (fixedExpired(l, s[o], now)) {
          next[o] = now;
        }
        next[o + 1] = Math.max(count, Math.min(l.capacity, count + q));
        break;
      }
      default: {
        reached = !slidingFits(l, s, o, now, q) || slidingEstimate(l, s, o, now, q) >= l.capacity;
        roll(l, s, o, now, next);
        next[o + 2] = Math.max(next[o + 2], Math.min(l.capacity, next[o + 2] + q));
      }
    }
    if (reached && q <= l.capacity) {
      penalize(l, s, o, now, next);
    }
    return reached;
  }

  /**
   * Starts the limit's penalty, unless it has none or one is already in force: rejections during
   * a penalty do not extend it. A bucket is held full: its backlog becomes capacity + penalty,
   * so while held it exceeds the capacity. A window records the end of the block.
   */
  private static void penalize(CompiledLimit l, long[] s, int o, long now, long[] next) {
    if (l.penalty <= 0) {
      return;
    }
    if (l.kind == CompiledLimit.BUCKET) {
      if (backlog(l, s, o, now) <= l.capacity) {
        hold(l, next, o, now, l.capacity + l.penalty);
      }
    } else {
      int b = o + l.slots - 1;
      if (blockedFor(s[b], now) == 0) {
        next[b] = Ticks.add(now, l.penalty);
      }
    }
  }

  private static long blockedFor(long blockedUntil, long now) {
    return blockedUntil == Ticks.NONE ? 0 : Ticks.positiveDifference(blockedUntil, now);
  }

  // fixed window ----------------------------------------------------------------

  /** A window that never started, has ended, or starts after now (time went back) is expired. */
  private static boolean fixedExpired(CompiledLimit l, long start, long now) {
    return start == Ticks.NONE || now >= Ticks.add(start, l.window);
  }

  private static long fixedCount(CompiledLimit l, long[] s, int o, long now) {
    return fixedExpired(l, s[o], now) ? 0 : s[o + 1];
  }

  // sliding window --------------------------------------------------------------

  /** Start of the aligned window holding {@code now}. */
  private static long alignedStart(CompiledLimit l, long now) {
    return Math.floorDiv(now, l.window) * l.window;
  }

  /** Writes the sliding state rolled forward to now's window into next[o..o+2]. */
  private static void roll(CompiledLimit l, long[] s, int o, long now, long[] next) {
    roll(l, s, o, now, next, o);
  }

  /** Writes (start, prev, curr) rolled forward to now's window into out[p..p+2]. */
  private static void roll(CompiledLimit l, long[] s, int o, long now, long[] out, int p) {
    long start = s[o];
    long k = alignedStart(l, now);
    if (start == Ticks.NONE || k > Ticks.add(start, l.window)) {
      out[p] = k;
      out[p + 1] = 0;
      out[p + 2] = 0;
    } else if (k == Ticks.add(start, l.window)) {
      out[p] = k;
      out[p + 1] = s[o + 2];
      out[p + 2] = 0;
    } else {
      // same window, or time went back into an older window: no time passes
      out[p] = start;
      out[p + 1] = s[o + 1];
      out[p + 2] = s[o + 2];
    }
  }

  /**
   * The sliding estimate plus q, in micro-units, defined in IEEE-754 doubles with exactly this
   * order of operations (every store computes the same expression): prev * (W - elapsed) / W +
   * (curr + q).
   */
  private static double slidingEstimate(CompiledLimit l, long[] s, int o, long now, long q) {
    long start = s[o];
    long prev;
    long curr;
    long k = alignedStart(l, now);
    if (start == Ticks.NONE || k > Ticks.add(start, l.window)) {
      return (double) q;
    } else if (k == Ticks.add(start, l.window)) {
      prev = s[o + 2];
      curr = 0;
      start = k;
    } else {
      prev = s[o + 1];
      curr = s[o + 2];
    }
    long elapsed = Math.max(0, Math.min(l.window, now - start));
    double weighted = (double) prev * (double) (l.window - elapsed) / (double) l.window;
    return weighted + (double) (curr + q);
  }

  private static boolean slidingFits(CompiledLimit l, long[] s, int o, long now, long q) {
    return slidingEstimate(l, s, o, now, q) <= (double) l.capacity;
  }

  // ---------------------------------------------------------------- figures

  /** Ticks until {@code q} would fit in limit l of state s, or NEVER. */
  private static long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    if (q > l.capacity) {
      return NEVER;
    }
    switch (l.kind) {
      case CompiledLimit.BUCKET:
        return ticksUp(l, Ticks.positiveDifference(Ticks.add(backlog(l, s, o, now), q), l.capacity));
      case CompiledLimit.FIXED: {
        long wait = blockedFor(s[o + 2], now);
        if (fixedCount(l, s, o, now) + q > l.capacity) {
          wait = Math.max(wait, Ticks.positiveDifference(Ticks.add(s[o], l.window), now));
        }
        return wait;
      }
      default: {
        long from = Ticks.add(now, blockedFor(s[o + 3], now));
        if (slidingFits(l, s, o, from, q)) {
          return from - now;
        }
        // The estimate never rises with time, and is zero two windows after the last start:
        // search for the first tick at which q fits.
        long lo = from;
        long hi = Ticks.add(Math.max(s[o], alignedStart(l, from)), 2 * l.window);
        while (lo + 1 < hi) {
          long mid = lo + (hi - lo) / 2;
          if (slidingFits(l, s, o, mid, q)) {
            hi = mid;
          } else {
            lo = mid;
          }
        }
        return hi - now;
      }
    }
  }

  /** Ticks until the limit holds nothing. */
  private static long resetAfter(CompiledLimit l, long[] s, int o, long now) {
    switch (l.kind) {
      case CompiledLimit.BUCKET:
        return ticksUp(l, backlog(l, s, o, now));
      case CompiledLimit.FIXED: {
        long blocked = blockedFor(s[o + 2], now);
        long end = fixedCount(l, s, o, now) > 0 ? Ticks.positiveDifference(Ticks.add(s[o], l.window), now) : 0;
        return Math.max(blocked, end);
      }
      default: {
        long blocked = blockedFor(s[o + 3], now);
        long[] r = new long[3];
        roll(l, s, o, now, r, 0);
        long start = r[0];
        long prev = r[1];
        long curr = r[2];
        long end = curr > 0 ? Ticks.add(start, 2 * l.window) : prev > 0 ? Ticks.add(start, l.window) : now;
        return Math.max(blocked, Ticks.positiveDifference(end, now));
      }
    }
  }

  /** Remaining quanta (capacity minus level), never negative. */
  private static double remaining(CompiledLimit l, long[] s, int o, long now) {
    switch (l.kind) {
      case CompiledLimit.BUCKET:
        return Math.max(0, l.capacity - backlog(l, s, o, now));
      case CompiledLimit.FIXED:
        return blockedFor(s[o + 2], now) > 0 ? 0 : Math.max(0, l.capacity - fixedCount(l, s, o, now));
      default:
        return blockedFor(s[o + 3], now) > 0 ? 0
            : Math.max(0, l.capacity - slidingEstimate(l, s, o, now, 0));
    }
  }

  /** Ticks until every limit of this state holds nothing; 0 when the key is idle. */
  static long idleAfter(CompiledLimit[] limits, long[] s, long now) {
    long most = 0;
    int o = 0;
    for (CompiledLimit l : limits) {
      most = Math.max(most, resetAfter(l, s, o, now));
      o += l.slots;
    }
    return most;
  }

  private static boolean[] negate(boolean[] a) {
    boolean[] r = new boolean[a.length];
    for (int i = 0; i < a.length; i++) {
      r[i] = !a[i];
    }
    return r;
  }

  /**
   * Builds the decision from the state after the operation. {@code ok[i]}: limit i admitted (for
   * fillUp: stayed below capacity). The deciding limit is, when rejected, the one that asks for
   * the longest wait; when admitted, the one with the least share of its capacity left.
   */
  private static Decision figures(CompiledLimit[] limits, long[] s, long now, long[] quanta,
      boolean[] ok, boolean allowed, boolean reached, long delayTicks, boolean fillUp) {
    int n = limits.length;
    Decision[] each = new Decision[n];
    int deciding = -1;
    double leastShare = Double.POSITIVE_INFINITY;
    long longestRetry = -1;
    long retryAll = 0;
    int o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      long retry = allowed && !fillUp ? 0 : retryAfter(l, s, o, now, quanta[i]);
      double remaining = remaining(l, s, o, now);
      each[i] = new Decision(ok[i], fillUp && !ok[i], l.units(remaining), l.nanos(retry),
          l.nanos(resetAfter(l, s, o, now)), l.nanos(delayTicks), l.limit, null);
      retryAll = Math.max(retryAll, each[i].retryAfterNanos());
      if (!ok[i]) {
        if (retry > longestRetry) {
          longestRetry = retry;
          deciding = i;
        }
      } else if (longestRetry < 0) {
        double share = remaining / l.capacity;
        if (share < leastShare) {
          leastShare = share;
          deciding = i;
        }
      }
      o += l.slots;
    }
    if (n == 1) {
      return each[0];
    }
    Decision d = each[deciding];
    return new Decision(allowed, reached, d.remaining(), allowed && !fillUp ? 0 : retryAll,
        d.resetAfterNanos(), d.delayNanos(), d.limit(), List.of(each));
  }
}

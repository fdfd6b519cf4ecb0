package dev.sluice;

import static dev.sluice.spi.StoreProtocol.BUCKET_EMPTY_AT;
import static dev.sluice.spi.StoreProtocol.BUCKET_REMAINDER;

/*
 * Leaky bucket, token bucket and GCRA: one function of time. State [E] or, for a scale above 1,
 * [E, R] (StoreProtocol): E the instant the bucket is empty, rounded up to a tick, R the steps
 * (1/scale tick) that rounding added. Backlog at now: scale * (E - now) - R steps while E > now,
 * else 0, and at most l.big; the level is backlog / stepsPerUnit units. Everything is relative to
 * now, never an absolute time times the scale, so that Lua's doubles stay exact.
 */
final class BucketRules extends Rules {
  static final BucketRules INSTANCE = new BucketRules();

  private BucketRules() {}

  /** Ticks of leak time in a bucket of scale 1 that empties at {@code e}, as seen at {@code now}. */
  static long backlog(long e, long now) {
    return e == Ticks.NONE ? 0 : Ticks.positiveDifference(e, now);
  }

  /** A bucket's backlog at {@code now} in steps: 0 when empty, at most {@code l.big}. */
  static long backlog(CompiledLimit l, long[] s, int o, long now) {
    long e = s[o + BUCKET_EMPTY_AT];
    if (e == Ticks.NONE || e <= now) {
      return 0;
    }
    long d = Ticks.positiveDifference(e, now);
    if (d > l.bigTicks) {
      return l.big;
    }
    // A remainder written under another scale (the limit changed) counts as less than a tick.
    return d * l.scale - (l.scale == 1 ? 0 : Math.min(s[o + BUCKET_REMAINDER], l.scale - 1));
  }

  /**
   * The admit rule, the one copy in Java: a bucket holding {@code backlog} steps admits {@code q}
   * more when they fit below its capacity. Every path calls it: {@link #fits}, the meter
   * (Engine.meterInPlace), the queue (Engine.decide's reserve) and the lock-free path
   * (LockFreeBucket, whose backlog is counted from its cell's origin).
   */
  static boolean admits(long backlog, long q, long capacity) {
    return Ticks.add(backlog, q) <= capacity;
  }

  /** {@code ticks} in steps of limit l, saturating at {@code l.big}. */
  static long steps(CompiledLimit l, long ticks) {
    return ticks > l.bigTicks ? l.big : ticks * l.scale;
  }

  /**
   * Ticks for {@code steps} (at least 0) of limit l, rounded up. (A division-free version, a double
   * estimate corrected by its remainder, measured slower on the hot key: it grew the lock-free
   * path past the JIT's inlining budget, and the Decision was then allocated.)
   */
  static long ticksUp(CompiledLimit l, long steps) {
    long s = l.scale;
    return s == 1 ? steps : (steps + s - 1) / s;
  }

  /**
   * Writes a bucket that holds {@code steps} (at least 0) at {@code now}: E = now + the steps
   * in ticks rounded up, R = the steps that rounding added.
   */
  static void hold(CompiledLimit l, long[] next, int o, long now, long steps) {
    long t = ticksUp(l, steps);
    next[o + BUCKET_EMPTY_AT] = Ticks.add(now, t);
    if (l.scale != 1) {
      next[o + BUCKET_REMAINDER] = t * l.scale - steps;
    }
  }

  @Override
  void initialize(CompiledLimit l, long[] s, int o) {
    s[o + BUCKET_EMPTY_AT] = Ticks.NONE;
    if (l.scale != 1) {
      s[o + BUCKET_REMAINDER] = 0;
    }
  }

  @Override
  boolean fits(CompiledLimit l, long[] s, int o, long now, long q) {
    return admits(backlog(l, s, o, now), q, l.capacity);
  }

  @Override
  void charge(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    hold(l, next, o, now, Ticks.add(backlog(l, s, o, now), q));
  }

  @Override
  boolean fill(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    long b = backlog(l, s, o, now);
    long filled = Ticks.add(b, q);
    hold(l, next, o, now, Math.max(b, Math.min(l.capacity, filled)));
    return filled >= l.capacity;
  }

  /** Held full: the backlog becomes capacity + penalty, so while held it exceeds the capacity. */
  @Override
  void penalize(CompiledLimit l, long[] s, int o, long now, long[] next) {
    if (backlog(l, s, o, now) <= l.capacity) {
      hold(l, next, o, now, l.capacity + l.penalty);
    }
  }

  @Override
  long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    return ticksUp(l, Ticks.positiveDifference(Ticks.add(backlog(l, s, o, now), q), l.capacity));
  }

  @Override
  long resetAfter(CompiledLimit l, long[] s, int o, long now) {
    return ticksUp(l, backlog(l, s, o, now));
  }

  @Override
  double remaining(CompiledLimit l, long[] s, int o, long now) {
    return Math.max(0, l.capacity - backlog(l, s, o, now));
  }

  // leases (Engine.lease) ------------------------------------------------------------------

  /** How many grains of {@code q} steps fit now: the room below the capacity, in whole grains. */
  static long grainsThatFit(CompiledLimit l, long[] s, int o, long now, long q) {
    long room = l.capacity - backlog(l, s, o, now);
    return room <= 0 ? 0 : room / q;
  }

  /** Charges {@code steps} that fit (a lease). */
  static void take(CompiledLimit l, long[] s, int o, long now, long steps, long[] next) {
    hold(l, next, o, now, backlog(l, s, o, now) + steps);
  }

  /**
   * Gives back {@code grains} of {@code q} steps (a release): the backlog falls by them, never
   * below empty; a bucket held by a penalty (backlog above capacity) keeps its hold.
   */
  static void giveBack(CompiledLimit l, long[] s, int o, long now, long grains, long q,
      long[] next) {
    long b = backlog(l, s, o, now);
    if (b == 0 || b > l.capacity) {
      return;
    }
    long back = grains > b / q ? b : grains * q;
    hold(l, next, o, now, b - back);
  }
}

package dev.sluice.testkit;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A plain model of every algorithm, written for clarity, not speed: a leaky bucket is a level
 * that leaks, a token bucket a count of tokens that refills, GCRA a theoretical arrival time,
 * windows are counts per window. Levels are exact fractions; time is integer ticks of the store's
 * resolution (the model floors nanoseconds to ticks as the store does).
 *
 * <p>Exactness: the model does not round costs. It agrees with a store decision for decision when
 * every cost and capacity is a whole number of ticks of leak time (e.g. rates that divide the
 * tick rate, costs in quarters). The property tests choose such parameters.
 *
 * <p>Not thread-safe: it is the sequential specification.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ReferenceModel {

  private final List<Limit> limits;
  private final long ticksPerSecond;
  private final long nanosPerTick;
  private final Map<String, List<Single>> keys = new HashMap<>();
  private long now = Long.MIN_VALUE;

  /** A model of a store whose clock ticks {@code ticksPerSecond} times a second. */
  public ReferenceModel(List<Limit> limits, long ticksPerSecond) {
    this.limits = List.copyOf(limits);
    this.ticksPerSecond = ticksPerSecond;
    this.nanosPerTick = 1_000_000_000L / ticksPerSecond;
  }

  public ModelDecision tryAcquire(String key, double cost, long nanos) {
    return meter(key, cost, nanos, true);
  }

  public ModelDecision check(String key, double cost, long nanos) {
    return meter(key, cost, nanos, false);
  }

  public void reset(String key) {
    keys.remove(key);
  }

  private List<Single> at(String key, long nanos) {
    // Time that goes backwards counts as no time.
    now = Math.max(now, Math.floorDiv(nanos, nanosPerTick));
    List<Single> ls = keys.computeIfAbsent(key, k -> {
      List<Single> list = new ArrayList<>();
      for (Limit l : limits) {
        list.add(single(l));
      }
      return list;
    });
    for (Single s : ls) {
      s.advanceTo(now);
    }
    return ls;
  }

  private ModelDecision meter(String key, double cost, long nanos, boolean charge) {
    List<Single> ls = at(key, nanos);
    Fraction c = Fraction.of(cost);
    boolean[] fits = new boolean[ls.size()];
    boolean all = true;
    for (int i = 0; i < ls.size(); i++) {
      fits[i] = ls.get(i).fits(c);
      all &= fits[i];
    }
    if (charge) {
      for (int i = 0; i < ls.size(); i++) {
        if (all) {
          ls.get(i).charge(c);
        } else if (!fits[i] && !ls.get(i).neverFits(c)) {
          ls.get(i).penalize();
        }
      }
    }
    return decision(ls, c, fits, all, false, 0, false);
  }

  public ModelDecision fillUp(String key, double cost, long nanos) {
    List<Single> ls = at(key, nanos);
    Fraction c = Fraction.of(cost);
    boolean[] below = new boolean[ls.size()];
    boolean reached = false;
    for (int i = 0; i < ls.size(); i++) {
      boolean full = ls.get(i).fill(c);
      if (full && !ls.get(i).neverFits(c)) {
        ls.get(i).penalize();
      }
      below[i] = !full;
      reached |= full;
    }
    return decision(ls, c, below, !reached, reached, 0, true);
  }

  /** The queue: depart when every limit's queue is empty; each is then busy for c / rate. */
  public ModelDecision reserve(String key, double cost, long nanos) {
    List<Single> ls = at(key, nanos);
    Fraction c = Fraction.of(cost);
    long departure = now;
    for (Single s : ls) {
      departure = Math.max(departure, ((BucketLike) s).emptyAt());
    }
    boolean[] fits = new boolean[ls.size()];
    boolean all = true;
    for (int i = 0; i < ls.size(); i++) {
      fits[i] = ((BucketLike) ls.get(i)).queueFits(departure, c);
      all &= fits[i];
    }
    for (int i = 0; i < ls.size(); i++) {
      if (all) {
        ((BucketLike) ls.get(i)).enqueue(departure, c);
      } else if (!fits[i] && !ls.get(i).neverFits(c)) {
        ls.get(i).penalize();
      }
    }
    return decision(ls, c, fits, all, false, all ? departure - now : 0, false);
  }

  private ModelDecision decision(List<Single> ls, Fraction c, boolean[] ok, boolean allowed,
      boolean reached, long delayTicks, boolean fill) {
    int deciding = -1;
    long longest = -1;
    Fraction leastShare = null;
    long retryAll = 0;
    List<ModelDecision> each = new ArrayList<>();
    for (int i = 0; i < ls.size(); i++) {
      Single s = ls.get(i);
      long retry = allowed && !fill ? 0 : s.retryAfter(c);
      Fraction remaining = s.remaining().max(Fraction.ZERO);
      each.add(new ModelDecision(ok[i], fill && !ok[i], remaining.doubleValue(), nanos(retry),
          nanos(s.resetAfter()), nanos(delayTicks), s.limit.name()));
      retryAll = Math.max(retryAll, nanos(retry));
      if (!ok[i]) {
        if (retry > longest) {
          longest = retry;
          deciding = i;
        }
      } else if (longest < 0) {
        Fraction share = remaining.divide(Fraction.of(s.limit.capacity()));
        if (leastShare == null || share.compareTo(leastShare) < 0) {
          leastShare = share;
          deciding = i;
        }
      }
    }
    if (ls.size() == 1) {
      return each.get(0);
    }
    ModelDecision d = each.get(deciding);
    return new ModelDecision(allowed, reached, d.remaining(), allowed && !fill ? 0 : retryAll,
        d.resetAfterNanos(), d.delayNanos(), d.limitName());
  }

  private long nanos(long ticks) {
    if (ticks == Long.MAX_VALUE) {
      return ticks;
    }
    return ticks * nanosPerTick;
  }

  private Single single(Limit l) {
    switch (l.algorithm()) {
      case LEAKY_BUCKET:
        return new LeakyBucket(l);
      case TOKEN_BUCKET:
        return new TokenBucket(l);
      case GCRA:
        return new Gcra(l);
      case FIXED_WINDOW:
        return new FixedWindow(l);
      default:
        return new SlidingWindow(l);
    }
  }

  private long ticksOf(Duration d) {
    return d.toNanos() / nanosPerTick;
  }

  /** Ticks one unit takes to leak at this limit's rate: period / amount. */
  private Fraction ticksPerUnit(Limit l) {
    return Fraction.of(ticksOf(l.rate().period())).divide(Fraction.of(l.rate().amount()));
  }

  /** Units that leak in {@code ticks} at {@code perUnit} ticks a unit. */
  private static Fraction units(long ticks, Fraction perUnit) {
    return Fraction.of(ticks).divide(perUnit);
  }

  private static long ceilOf(Fraction ticks) {
    return ticks.ceil();
  }

  /** One limit's state for one key. */
  abstract static class Single {
    final Limit limit;
    final Fraction capacity;

    Single(Limit limit) {
      this.limit = limit;
      this.capacity = Fraction.of(limit.capacity());
    }



    abstract void advanceTo(long t);

    abstract boolean fits(Fraction c);

    abstract void charge(Fraction c);

    /** Adds c clamped at capacity; returns whether capacity was reached. */
    abstract boolean fill(Fraction c);

    abstract void penalize();

    abstract Fraction remaining();

    abstract long retryAfter(Fraction c);

    abstract long resetAfter();

    boolean neverFits(Fraction c) {
      return c.compareTo(capacity) > 0;
    }
  }

  /** What reserve() needs of a bucket. */
  interface BucketLike {
    long emptyAt();

    boolean queueFits(long departure, Fraction c);

    void enqueue(long departure, Fraction c);
  }

  /** Seed 000's bucket: a level that leaks at a rate, never below zero. */
  final class LeakyBucket extends Single implements BucketLike {
    /** Ticks one unit takes to leak. */
    final Fraction perUnit;
    Fraction level = Fraction.ZERO;
    long last = Long.MIN_VALUE;
    long heldUntil = Long.MIN_VALUE;

    LeakyBucket(Limit l) {
      super(l);
      perUnit = ticksPerUnit(l);
    }

    @Override
    void advanceTo(long t) {
      long from = Math.max(last, heldUntil);
      if (last != Long.MIN_VALUE && t > from) {
        level = level.subtract(units(t - from, perUnit)).max(Fraction.ZERO);
      }
      last = Math.max(last, t);
    }

    @Override
    boolean fits(Fraction c) {
      return level.add(c).compareTo(capacity) <= 0;
    }

    @Override
    void charge(Fraction c) {
      level = level.add(c);
    }

    @Override
    boolean fill(Fraction c) {
      boolean reached = level.add(c).compareTo(capacity) >= 0;
      level = level.max(level.add(c).min(capacity));
      return reached;
    }

    /** An overflow holds the bucket full for the penalty, unless a hold is already on. */
    @Override
    void penalize() {
      if (limit.penalty().isZero() || heldUntil > now) {
        return;
      }
      level = capacity;
      heldUntil = now + ticksOf(limit.penalty());
    }

    long heldFor() {
      return heldUntil > now ? heldUntil - now : 0;
    }

    /** Ticks until the level is zero, counting a hold. */
    Fraction drainTicks() {
      Fraction held = Fraction.of(heldFor());
      return held.add(level.multiply(perUnit));
    }

    @Override
    Fraction remaining() {
      return heldUntil > now ? Fraction.ZERO : capacity.subtract(level);
    }

    @Override
    long retryAfter(Fraction c) {
      if (neverFits(c)) {
        return Long.MAX_VALUE;
      }
      Fraction held = Fraction.of(heldFor());
      Fraction excess = level.add(c).subtract(capacity).max(Fraction.ZERO);
      return ceilOf(held.add(excess.multiply(perUnit)));
    }

    @Override
    long resetAfter() {
      return ceilOf(drainTicks());
    }

    @Override
    public long emptyAt() {
      return now + ceilOf(drainTicks());
    }

    @Override
    public boolean queueFits(long departure, Fraction c) {
      return units(departure - now, perUnit).add(c).compareTo(capacity) <= 0;
    }

    @Override
    public void enqueue(long departure, Fraction c) {
      level = units(departure - now, perUnit).add(c);
      heldUntil = Long.MIN_VALUE;
    }
  }

  /** Tokens refill at a rate up to the capacity; a request takes tokens; starts full. */
  final class TokenBucket extends Single implements BucketLike {
    final Fraction perUnit;
    Fraction tokens;
    long last = Long.MIN_VALUE;

    TokenBucket(Limit l) {
      super(l);
      perUnit = ticksPerUnit(l);
      tokens = capacity;
    }

    @Override
    void advanceTo(long t) {
      if (last != Long.MIN_VALUE && t > last) {
        tokens = capacity.min(tokens.add(units(t - last, perUnit)));
      }
      last = Math.max(last, t);
    }

    @Override
    boolean fits(Fraction c) {
      return tokens.compareTo(c) >= 0;
    }

    @Override
    void charge(Fraction c) {
      tokens = tokens.subtract(c);
    }

    @Override
    boolean fill(Fraction c) {
      boolean reached = tokens.subtract(c).signum() <= 0;
      tokens = tokens.subtract(c).max(Fraction.ZERO);
      return reached;
    }

    @Override
    void penalize() {
      if (!limit.penalty().isZero()) {
        throw new UnsupportedOperationException("the token model has no penalty");
      }
    }

    @Override
    Fraction remaining() {
      return tokens;
    }

    @Override
    long retryAfter(Fraction c) {
      return neverFits(c) ? Long.MAX_VALUE
          : ceilOf(c.subtract(tokens).max(Fraction.ZERO).multiply(perUnit));
    }

    @Override
    long resetAfter() {
      return ceilOf(capacity.subtract(tokens).multiply(perUnit));
    }

    @Override
    public long emptyAt() {
      return now + resetAfter();
    }

    @Override
    public boolean queueFits(long departure, Fraction c) {
      Fraction owed = units(departure - now, perUnit).add(c);
      return owed.compareTo(capacity) <= 0;
    }

    @Override
    public void enqueue(long departure, Fraction c) {
      tokens = capacity.subtract(units(departure - now, perUnit).add(c));
    }
  }

  /** GCRA: admit iff the theoretical arrival time, less the tolerance, is not in the future. */
  final class Gcra extends Single implements BucketLike {
    final Fraction interval;
    final Fraction tolerance;
    Fraction tat;

    Gcra(Limit l) {
      super(l);
      interval = ticksPerUnit(l);
      tolerance = capacity.multiply(interval);
    }

    @Override
    void advanceTo(long t) {
      if (tat == null) {
        tat = Fraction.of(t);
      }
    }

    private Fraction start() {
      return tat.max(Fraction.of(now));
    }

    @Override
    boolean fits(Fraction c) {
      return start().add(c.multiply(interval)).subtract(Fraction.of(now))
          .compareTo(tolerance) <= 0;
    }

    @Override
    void charge(Fraction c) {
      tat = start().add(c.multiply(interval));
    }

    @Override
    boolean fill(Fraction c) {
      Fraction wanted = start().add(c.multiply(interval));
      Fraction cap = Fraction.of(now).add(tolerance);
      boolean reached = wanted.compareTo(cap) >= 0;
      tat = start().max(wanted.min(cap));
      return reached;
    }

    @Override
    void penalize() {
      if (!limit.penalty().isZero()) {
        throw new UnsupportedOperationException("the GCRA model has no penalty");
      }
    }

    @Override
    Fraction remaining() {
      return tolerance.subtract(start().subtract(Fraction.of(now))).divide(interval);
    }

    @Override
    long retryAfter(Fraction c) {
      return neverFits(c) ? Long.MAX_VALUE
          : ceilOf(start().add(c.multiply(interval)).subtract(tolerance)
              .subtract(Fraction.of(now)).max(Fraction.ZERO));
    }

    @Override
    long resetAfter() {
      return ceilOf(start().subtract(Fraction.of(now)));
    }

    @Override
    public long emptyAt() {
      return ceilOf(start());
    }

    @Override
    public boolean queueFits(long departure, Fraction c) {
      return Fraction.of(departure - now).add(c.multiply(interval)).compareTo(tolerance) <= 0;
    }

    @Override
    public void enqueue(long departure, Fraction c) {
      tat = Fraction.of(departure).add(c.multiply(interval));
    }
  }

  /** Seed 004's time-bucketed limit: a count that starts with the first request of a window. */
  final class FixedWindow extends Single {
    final long window;
    Long start;
    Fraction count = Fraction.ZERO;
    long blockedUntil = Long.MIN_VALUE;

    FixedWindow(Limit l) {
      super(l);
      window = ticksOf(l.window());
    }

    @Override
    void advanceTo(long t) {
      if (start != null && t >= start + window) {
        start = null;
        count = Fraction.ZERO;
      }
    }

    boolean blocked() {
      return blockedUntil > now;
    }

    @Override
    boolean fits(Fraction c) {
      return !blocked() && count.add(c).compareTo(capacity) <= 0;
    }

    @Override
    void charge(Fraction c) {
      if (start == null) {
        start = now;
      }
      count = count.add(c);
    }

    @Override
    boolean fill(Fraction c) {
      if (start == null) {
        start = now;
      }
      boolean reached = count.add(c).compareTo(capacity) >= 0;
      count = count.max(count.add(c).min(capacity));
      return reached;
    }

    /** An overflow blocks the key for the penalty, unless a block is already on. */
    @Override
    void penalize() {
      if (!limit.penalty().isZero() && blockedUntil <= now) {
        blockedUntil = now + ticksOf(limit.penalty());
      }
    }

    long blockedFor() {
      return blockedUntil > now ? blockedUntil - now : 0;
    }

    @Override
    Fraction remaining() {
      return blocked() ? Fraction.ZERO : capacity.subtract(count);
    }

    @Override
    long retryAfter(Fraction c) {
      if (neverFits(c)) {
        return Long.MAX_VALUE;
      }
      long wait = blockedFor();
      if (count.add(c).compareTo(capacity) > 0) {
        wait = Math.max(wait, start + window - now);
      }
      return wait;
    }

    @Override
    long resetAfter() {
      long end = count.signum() > 0 ? start + window - now : 0;
      return Math.max(end, blockedFor());
    }
  }

  /**
   * The sliding-window counter: counts per aligned window; the estimate, by definition computed
   * in doubles as prev * (W - elapsed) / W + curr, must stay within the limit (micro-units).
   */
  final class SlidingWindow extends Single {
    final long window;
    final long limitMicros;
    final TreeMap<Long, Long> counts = new TreeMap<>();
    long blockedUntil = Long.MIN_VALUE;

    SlidingWindow(Limit l) {
      super(l);
      window = ticksOf(l.window());
      limitMicros = Fraction.of(limit.capacity()).multiply(Fraction.of(1_000_000)).ceil();
    }

    @Override
    void advanceTo(long t) {
      counts.headMap(Math.floorDiv(t, window) - 1).clear();
    }

    long index(long t) {
      return Math.floorDiv(t, window);
    }

    double estimate(long t, long micros) {
      long k = index(t);
      long prev = counts.getOrDefault(k - 1, 0L);
      long curr = counts.getOrDefault(k, 0L);
      long elapsed = t - k * window;
      return (double) prev * (double) (window - elapsed) / (double) window + (double) (curr + micros);
    }

    long micros(Fraction c) {
      return c.multiply(Fraction.of(1_000_000)).ceil();
    }

    boolean fitsAt(long t, long micros) {
      return estimate(t, micros) <= (double) limitMicros;
    }

    @Override
    boolean fits(Fraction c) {
      return blockedUntil <= now && fitsAt(now, micros(c));
    }

    @Override
    void charge(Fraction c) {
      counts.merge(index(now), micros(c), Long::sum);
    }

    @Override
    boolean fill(Fraction c) {
      long m = micros(c);
      boolean reached = estimate(now, m) >= (double) limitMicros;
      long curr = counts.getOrDefault(index(now), 0L);
      counts.put(index(now), Math.max(curr, Math.min(limitMicros, curr + m)));
      return reached;
    }

    /** An overflow blocks the key for the penalty, unless a block is already on. */
    @Override
    void penalize() {
      if (!limit.penalty().isZero() && blockedUntil <= now) {
        blockedUntil = now + ticksOf(limit.penalty());
      }
    }

    long blockedFor() {
      return blockedUntil > now ? blockedUntil - now : 0;
    }

    @Override
    Fraction remaining() {
      if (blockedUntil > now) {
        return Fraction.ZERO;
      }
      double left = Math.max(0, (double) limitMicros - estimate(now, 0));
      return Fraction.of(left / 1e6);
    }

    @Override
    long retryAfter(Fraction c) {
      if (neverFits(c)) {
        return Long.MAX_VALUE;
      }
      long m = micros(c);
      long from = Math.max(now, blockedUntil);
      if (fitsAt(from, m)) {
        return from - now;
      }
      long lo = from;
      long hi = (index(from) + 2) * window;
      while (lo + 1 < hi) {
        long mid = lo + (hi - lo) / 2;
        if (fitsAt(mid, m)) {
          hi = mid;
        } else {
          lo = mid;
        }
      }
      return hi - now;
    }

    @Override
    long resetAfter() {
      long k = index(now);
      long end = counts.getOrDefault(k, 0L) > 0 ? (k + 2) * window
          : counts.getOrDefault(k - 1, 0L) > 0 ? (k + 1) * window : now;
      return Math.max(end - now, blockedFor());
    }
  }

  /** Whether every limit is of an algorithm the model can reserve() on. */
  public static boolean canReserve(List<Limit> limits) {
    return limits.stream().allMatch(l -> l.algorithm().isBucket());
  }

  /** Whether the model supports a penalty on this algorithm. */
  public static boolean modelsPenalty(Algorithm a) {
    return a != Algorithm.TOKEN_BUCKET && a != Algorithm.GCRA;
  }

  long ticksPerSecond() {
    return ticksPerSecond;
  }
}

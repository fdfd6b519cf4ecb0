package dev.sluice.testkit;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A plain model of every algorithm, written for clarity, not speed: a leaky bucket is a level
 * that leaks, a token bucket a count of tokens that refills, GCRA a theoretical arrival time,
 * windows are counts per window. Levels are exact decimals; time is integer ticks of the store's
 * resolution (the model floors nanoseconds to ticks as the store does).
 *
 * <p>Exactness: the model does not round costs. It agrees with a store decision for decision when
 * every cost and capacity is a whole number of ticks of leak time (e.g. rates that divide the
 * tick rate, costs in quarters). The property tests choose such parameters.
 *
 * <p>Not thread-safe: it is the sequential specification.
 */
public final class ReferenceModel {
  static final MathContext MC = new MathContext(50, RoundingMode.HALF_EVEN);
  private static final BigDecimal MICRO = BigDecimal.valueOf(1_000_000);

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
    BigDecimal c = new BigDecimal(cost);
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
    BigDecimal c = new BigDecimal(cost);
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
    BigDecimal c = new BigDecimal(cost);
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

  private ModelDecision decision(List<Single> ls, BigDecimal c, boolean[] ok, boolean allowed,
      boolean reached, long delayTicks, boolean fill) {
    int deciding = -1;
    long longest = -1;
    BigDecimal leastShare = null;
    long retryAll = 0;
    List<ModelDecision> each = new ArrayList<>();
    for (int i = 0; i < ls.size(); i++) {
      Single s = ls.get(i);
      long retry = allowed && !fill ? 0 : s.retryAfter(c);
      BigDecimal remaining = s.remaining().max(BigDecimal.ZERO);
      each.add(new ModelDecision(ok[i], fill && !ok[i], remaining.doubleValue(), nanos(retry),
          nanos(s.resetAfter()), nanos(delayTicks), s.limit.name()));
      retryAll = Math.max(retryAll, nanos(retry));
      if (!ok[i]) {
        if (retry > longest) {
          longest = retry;
          deciding = i;
        }
      } else if (longest < 0) {
        BigDecimal share = remaining.divide(BigDecimal.valueOf(s.limit.capacity()), MC);
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

  private long ticksOf(java.time.Duration d) {
    return d.toNanos() / nanosPerTick;
  }

  /** Ticks one unit takes to leak at this limit's rate: period / amount. */
  private BigDecimal ticksPerUnit(Limit l) {
    BigDecimal period = BigDecimal.valueOf(ticksOf(l.rate().period()));
    return period.divide(new BigDecimal(l.rate().amount()), MC);
  }

  private static long ceil(BigDecimal ticks) {
    return ticks.setScale(0, RoundingMode.CEILING).longValueExact();
  }

  /** One limit's state for one key. */
  abstract class Single {
    final Limit limit;
    final BigDecimal capacity;

    Single(Limit limit) {
      this.limit = limit;
      this.capacity = new BigDecimal(limit.capacity());
    }

    abstract void advanceTo(long t);

    abstract boolean fits(BigDecimal c);

    abstract void charge(BigDecimal c);

    /** Adds c clamped at capacity; returns whether capacity was reached. */
    abstract boolean fill(BigDecimal c);

    abstract void penalize();

    abstract BigDecimal remaining();

    abstract long retryAfter(BigDecimal c);

    abstract long resetAfter();

    boolean neverFits(BigDecimal c) {
      return c.compareTo(capacity) > 0;
    }
  }

  /** What reserve() needs of a bucket. */
  interface BucketLike {
    long emptyAt();

    boolean queueFits(long departure, BigDecimal c);

    void enqueue(long departure, BigDecimal c);
  }

  /** Seed 000's bucket: a level that leaks at a rate, never below zero. */
  final class LeakyBucket extends Single implements BucketLike {
    final BigDecimal perTick;
    BigDecimal level = BigDecimal.ZERO;
    long last = Long.MIN_VALUE;
    long heldUntil = Long.MIN_VALUE;

    LeakyBucket(Limit l) {
      super(l);
      perTick = BigDecimal.ONE.divide(ticksPerUnit(l), MC);
    }

    @Override
    void advanceTo(long t) {
      long from = Math.max(last, heldUntil);
      if (last != Long.MIN_VALUE && t > from) {
        level = level.subtract(perTick.multiply(BigDecimal.valueOf(t - from))).max(BigDecimal.ZERO);
      }
      last = Math.max(last, t);
    }

    @Override
    boolean fits(BigDecimal c) {
      return level.add(c).compareTo(capacity) <= 0;
    }

    @Override
    void charge(BigDecimal c) {
      level = level.add(c);
    }

    @Override
    boolean fill(BigDecimal c) {
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
    BigDecimal drainTicks() {
      BigDecimal held = BigDecimal.valueOf(heldFor());
      return held.add(level.divide(perTick, MC));
    }

    @Override
    BigDecimal remaining() {
      return heldUntil > now ? BigDecimal.ZERO : capacity.subtract(level);
    }

    @Override
    long retryAfter(BigDecimal c) {
      if (neverFits(c)) {
        return Long.MAX_VALUE;
      }
      BigDecimal held = BigDecimal.valueOf(heldFor());
      BigDecimal excess = level.add(c).subtract(capacity).max(BigDecimal.ZERO);
      return ceil(held.add(excess.divide(perTick, MC)));
    }

    @Override
    long resetAfter() {
      return ceil(drainTicks());
    }

    @Override
    public long emptyAt() {
      return now + ceil(drainTicks());
    }

    @Override
    public boolean queueFits(long departure, BigDecimal c) {
      BigDecimal busy = BigDecimal.valueOf(departure - now).multiply(perTick);
      return busy.add(c).compareTo(capacity) <= 0;
    }

    @Override
    public void enqueue(long departure, BigDecimal c) {
      level = BigDecimal.valueOf(departure - now).multiply(perTick).add(c);
      heldUntil = Long.MIN_VALUE;
    }
  }

  /** Tokens refill at a rate up to the capacity; a request takes tokens; starts full. */
  final class TokenBucket extends Single implements BucketLike {
    final BigDecimal perTick;
    BigDecimal tokens;
    long last = Long.MIN_VALUE;

    TokenBucket(Limit l) {
      super(l);
      perTick = BigDecimal.ONE.divide(ticksPerUnit(l), MC);
      tokens = capacity;
    }

    @Override
    void advanceTo(long t) {
      if (last != Long.MIN_VALUE && t > last) {
        tokens = capacity.min(tokens.add(perTick.multiply(BigDecimal.valueOf(t - last))));
      }
      last = Math.max(last, t);
    }

    @Override
    boolean fits(BigDecimal c) {
      return tokens.compareTo(c) >= 0;
    }

    @Override
    void charge(BigDecimal c) {
      tokens = tokens.subtract(c);
    }

    @Override
    boolean fill(BigDecimal c) {
      boolean reached = tokens.subtract(c).signum() <= 0;
      tokens = tokens.subtract(c).max(BigDecimal.ZERO);
      return reached;
    }

    @Override
    void penalize() {
      if (!limit.penalty().isZero()) {
        throw new UnsupportedOperationException("the token model has no penalty");
      }
    }

    @Override
    BigDecimal remaining() {
      return tokens;
    }

    @Override
    long retryAfter(BigDecimal c) {
      return neverFits(c) ? Long.MAX_VALUE
          : ceil(c.subtract(tokens).max(BigDecimal.ZERO).divide(perTick, MC));
    }

    @Override
    long resetAfter() {
      return ceil(capacity.subtract(tokens).divide(perTick, MC));
    }

    @Override
    public long emptyAt() {
      return now + resetAfter();
    }

    @Override
    public boolean queueFits(long departure, BigDecimal c) {
      BigDecimal owed = BigDecimal.valueOf(departure - now).multiply(perTick).add(c);
      return owed.compareTo(capacity) <= 0;
    }

    @Override
    public void enqueue(long departure, BigDecimal c) {
      tokens = capacity.subtract(BigDecimal.valueOf(departure - now).multiply(perTick).add(c));
    }
  }

  /** GCRA: admit iff the theoretical arrival time, less the tolerance, is not in the future. */
  final class Gcra extends Single implements BucketLike {
    final BigDecimal interval;
    final BigDecimal tolerance;
    BigDecimal tat;

    Gcra(Limit l) {
      super(l);
      interval = ticksPerUnit(l);
      tolerance = capacity.multiply(interval);
    }

    @Override
    void advanceTo(long t) {
      if (tat == null) {
        tat = BigDecimal.valueOf(t);
      }
    }

    private BigDecimal start() {
      return tat.max(BigDecimal.valueOf(now));
    }

    @Override
    boolean fits(BigDecimal c) {
      return start().add(c.multiply(interval)).subtract(BigDecimal.valueOf(now))
          .compareTo(tolerance) <= 0;
    }

    @Override
    void charge(BigDecimal c) {
      tat = start().add(c.multiply(interval));
    }

    @Override
    boolean fill(BigDecimal c) {
      BigDecimal wanted = start().add(c.multiply(interval));
      BigDecimal cap = BigDecimal.valueOf(now).add(tolerance);
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
    BigDecimal remaining() {
      return tolerance.subtract(start().subtract(BigDecimal.valueOf(now))).divide(interval, MC);
    }

    @Override
    long retryAfter(BigDecimal c) {
      return neverFits(c) ? Long.MAX_VALUE
          : ceil(start().add(c.multiply(interval)).subtract(tolerance)
              .subtract(BigDecimal.valueOf(now)).max(BigDecimal.ZERO));
    }

    @Override
    long resetAfter() {
      return ceil(start().subtract(BigDecimal.valueOf(now)));
    }

    @Override
    public long emptyAt() {
      return ceil(start());
    }

    @Override
    public boolean queueFits(long departure, BigDecimal c) {
      return BigDecimal.valueOf(departure - now).add(c.multiply(interval)).compareTo(tolerance) <= 0;
    }

    @Override
    public void enqueue(long departure, BigDecimal c) {
      tat = BigDecimal.valueOf(departure).add(c.multiply(interval));
    }
  }

  /** Seed 004's time-bucketed limit: a count that starts with the first request of a window. */
  final class FixedWindow extends Single {
    final long window;
    Long start;
    BigDecimal count = BigDecimal.ZERO;
    long blockedUntil = Long.MIN_VALUE;

    FixedWindow(Limit l) {
      super(l);
      window = ticksOf(l.window());
    }

    @Override
    void advanceTo(long t) {
      if (start != null && t >= start + window) {
        start = null;
        count = BigDecimal.ZERO;
      }
    }

    boolean blocked() {
      return blockedUntil > now;
    }

    @Override
    boolean fits(BigDecimal c) {
      return !blocked() && count.add(c).compareTo(capacity) <= 0;
    }

    @Override
    void charge(BigDecimal c) {
      if (start == null) {
        start = now;
      }
      count = count.add(c);
    }

    @Override
    boolean fill(BigDecimal c) {
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
    BigDecimal remaining() {
      return blocked() ? BigDecimal.ZERO : capacity.subtract(count);
    }

    @Override
    long retryAfter(BigDecimal c) {
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
      limitMicros = capacity.multiply(MICRO).longValueExact();
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

    long micros(BigDecimal c) {
      return c.multiply(MICRO).longValueExact();
    }

    boolean fitsAt(long t, long micros) {
      return estimate(t, micros) <= (double) limitMicros;
    }

    @Override
    boolean fits(BigDecimal c) {
      return blockedUntil <= now && fitsAt(now, micros(c));
    }

    @Override
    void charge(BigDecimal c) {
      counts.merge(index(now), micros(c), Long::sum);
    }

    @Override
    boolean fill(BigDecimal c) {
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
    BigDecimal remaining() {
      if (blockedUntil > now) {
        return BigDecimal.ZERO;
      }
      double left = Math.max(0, (double) limitMicros - estimate(now, 0));
      return new BigDecimal(left / 1e6);
    }

    @Override
    long retryAfter(BigDecimal c) {
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

package dev.sluice;

import dev.sluice.spi.StoreProtocol;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

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
  // Operation codes: StoreProtocol.Operation's (ProtocolCodesTest compares).
  static final int TRY_ACQUIRE = 0;
  static final int CHECK = 1;
  static final int FILL_UP = 2;
  static final int RESERVE = 3;
  static final int LEASE = 4;
  static final int RELEASE = 5;

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
      l.rules.initialize(l, state, o);
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
    return decide(limits, state, now, op, cost, 1, next);
  }

  /**
   * As {@link #decide(CompiledLimit[], long[], long, int, double, long[])}; {@code count} is the
   * number of grains of {@code cost} a lease asks for or a release returns (1 otherwise).
   */
  static Decision decide(CompiledLimit[] limits, long[] state, long now, int op, double cost,
      long count, long[] next) {
    return decide(limits, state, now, op, quanta(limits, cost), count, next);
  }

  /** The quantum of {@code cost} in each limit. */
  static long[] quanta(CompiledLimit[] limits, double cost) {
    long[] quanta = new long[limits.length];
    for (int i = 0; i < limits.length; i++) {
      quanta[i] = limits[i].quantum(cost);
    }
    return quanta;
  }

  /** As the others, with each limit's quantum of the cost given (as a request carries them). */
  static Decision decide(CompiledLimit[] limits, long[] state, long now, int op, long[] quanta,
      long count, long[] next) {
    if (op == LEASE || op == RELEASE) {
      long granted = lease(limits, state, now, op, quanta, count, next);
      boolean[] ok = new boolean[limits.length];
      for (int i = 0; i < limits.length; i++) {
        ok[i] = op == RELEASE || granted > 0;
      }
      boolean allowed = op == RELEASE || granted > 0;
      return figures(limits, next, now, quanta, ok, allowed, false, 0, false);
    }
    System.arraycopy(state, 0, next, 0, state.length);
    int n = limits.length;
    boolean[] fits = new boolean[n];
    boolean all = true;
    // reserve: the request departs once every limit's queue is empty. Limit i's queue ahead of
    // it, in its own steps, is the longest backlog among the limits of its scale (exact) and,
    // for a limit of another scale, that limit's wait rounded up to a whole tick (never in the
    // client's favour).
    long[] queue = null;
    long departure = now;
    if (op == RESERVE) {
      for (CompiledLimit l : limits) {
        if (l.kind != CompiledLimit.BUCKET) {
          throw new UnsupportedOperationException(
              "reserve() shapes output to a leak rate, and limit '" + l.limit.name() + "' ("
                  + l.limit.algorithm().id() + ") has none: use tryAcquire() or acquire()");
        }
      }
      queue = queues(limits, state, now);
      for (int i = 0; i < n; i++) {
        departure = Math.max(departure, Ticks.add(now, BucketRules.ticksUp(limits[i], queue[i])));
      }
    }
    int o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      if (op == RESERVE) {
        fits[i] = BucketRules.admits(queue[i], quanta[i], l.capacity);
      } else {
        fits[i] = l.rules.fits(l, state, o, now, quanta[i]);
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
        full[i] = l.rules.fill(l, state, o, now, q, next);
        if (full[i] && q <= l.capacity) {
          penalize(l, state, o, now, next);
        }
        reached |= full[i];
      } else if (op != CHECK) {
        if (all && op == RESERVE) {
          BucketRules.hold(l, next, o, now, Ticks.add(queue[i], q));
        } else if (all) {
          l.rules.charge(l, state, o, now, q, next);
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

  /**
   * The meter ({@code tryAcquire}, {@code check}) on several limits without intermediate arrays:
   * the same decision and next state as {@link #decide(CompiledLimit[], long[], long, int, double,
   * long[])}, with each limit's own figures ({@link Decision#perLimit()}) computed when first
   * asked for, from {@code state} and {@code next}, which the caller must never change afterwards.
   * Writes the state to keep into {@code next}; returns the decision.
   */
  static Decision meter(CompiledLimit[] limits, long[] state, long now, int op, double cost,
      long[] next) {
    System.arraycopy(state, 0, next, 0, state.length);
    int n = limits.length;
    boolean all = true;
    int o = 0;
    for (CompiledLimit l : limits) {
      all &= l.rules.fits(l, state, o, now, l.quantum(cost));
      o += l.slots;
    }
    if (op != CHECK) {
      o = 0;
      for (CompiledLimit l : limits) {
        long q = l.quantum(cost);
        if (all) {
          l.rules.charge(l, state, o, now, q, next);
        } else if (q <= l.capacity && l.penalty > 0 && !l.rules.fits(l, state, o, now, q)) {
          l.rules.penalize(l, state, o, now, next);
        }
        o += l.slots;
      }
    }
    // the deciding limit: rejected, the one that asks for the longest wait; admitted, the one
    // with the least share of its capacity left (as figures() chooses)
    int deciding = -1;
    double leastShare = Double.POSITIVE_INFINITY;
    long longestRetry = -1;
    long retryAll = 0;
    o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      long q = l.quantum(cost);
      if (!all && !l.rules.fits(l, state, o, now, q)) {
        long retry = retryAfter(l, next, o, now, q);
        retryAll = Math.max(retryAll, l.nanos(retry));
        if (retry > longestRetry) {
          longestRetry = retry;
          deciding = i;
        }
      } else if (longestRetry < 0) {
        if (!all) {
          retryAll = Math.max(retryAll, l.nanos(retryAfter(l, next, o, now, q)));
        }
        double share = l.rules.remaining(l, next, o, now) / l.capacity;
        if (share < leastShare) {
          leastShare = share;
          deciding = i;
        }
      } else {
        retryAll = Math.max(retryAll, l.nanos(retryAfter(l, next, o, now, q)));
      }
      o += l.slots;
    }
    CompiledLimit d = limits[deciding];
    int at = offset(limits, deciding);
    return new Decision(all, false, d.units(d.rules.remaining(d, next, at, now)),
        all ? 0 : retryAll, d.nanos(d.rules.resetAfter(d, next, at, now)), 0, d.limit,
        n == 1 ? null : new PerLimit(limits, state, next, now, cost, all));
  }

  /**
   * The meter ({@code tryAcquire}, {@code check}) on limits that are all buckets, in place: the
   * same decision and next state as {@link #decide(CompiledLimit[], long[], long, int, double,
   * long[])} (MeterEquivalenceTest compares them), with the state {@code s} changed in place when
   * the decision writes (an admission, or a rejection that starts a penalty). Returns the
   * {@link Metered} decision; or, when {@code mayWrite} is false and the decision would write,
   * null, having changed nothing.
   *
   * <p>The decision keeps each bucket's backlog after it, not {@code s}, so the caller may change
   * {@code s} afterwards; nothing but the Metered object is allocated (and an array of backlogs
   * for more than two limits), and which limit decides, and its figures, are worked out only
   * when asked for. A read of {@code s} that races a writer may compute garbage (the caller
   * validates and discards it): nothing here throws or loops on any values.
   */
  static Metered meterInPlace(CompiledLimit[] limits, long[] s, long now, int op, double cost,
      boolean mayWrite) {
    if (limits.length == 2) {
      return meterTwo(limits, s, now, op, cost, mayWrite);
    }
    int n = limits.length;
    boolean all = true;
    boolean penalty = false;
    long b0 = 0;
    long b1 = 0;
    int o = 0;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      long b = BucketRules.backlog(l, s, o, now);
      long q = l.quantum(cost);
      boolean fits = BucketRules.admits(b, q, l.capacity);
      all &= fits;
      penalty |= !fits && startsPenalty(l, b, q);
      if (i == 0) {
        b0 = b;
      } else if (i == 1) {
        b1 = b;
      }
      o += l.slots;
    }
    boolean write = op != CHECK && (all || penalty);
    if (write && !mayWrite) {
      return null;
    }
    long[] more = n > 2 ? new long[n] : null;
    if (write || more != null) {
      o = 0;
      for (int i = 0; i < n; i++) {
        CompiledLimit l = limits[i];
        long b = i == 0 ? b0 : i == 1 ? b1 : BucketRules.backlog(l, s, o, now);
        long after = b;
        if (write) {
          long q = l.quantum(cost);
          if (all) {
            after = Ticks.add(b, q);
            BucketRules.hold(l, s, o, now, after);
          } else if (!BucketRules.admits(b, q, l.capacity) && startsPenalty(l, b, q)) {
            after = l.capacity + l.penalty;   // BucketRules.penalize: held full for the penalty
            BucketRules.hold(l, s, o, now, after);
          }
        }
        if (i == 0) {
          b0 = after;
        } else if (i == 1) {
          b1 = after;
        }
        if (more != null) {
          more[i] = after;
        }
        o += l.slots;
      }
    }
    return new Metered(limits, cost, all, write, b0, b1, more);
  }

  /**
   * {@link #meterInPlace} for exactly two buckets, the usual several-limit key, without its loops
   * (the same rule, step by step; MeterEquivalenceTest checks it with the rest).
   */
  private static Metered meterTwo(CompiledLimit[] limits, long[] s, long now, int op,
      double cost, boolean mayWrite) {
    CompiledLimit l0 = limits[0];
    CompiledLimit l1 = limits[1];
    int o1 = l0.slots;
    long b0 = BucketRules.backlog(l0, s, 0, now);
    long b1 = BucketRules.backlog(l1, s, o1, now);
    long q0 = l0.quantum(cost);
    long q1 = l1.quantum(cost);
    boolean fits0 = BucketRules.admits(b0, q0, l0.capacity);
    boolean fits1 = BucketRules.admits(b1, q1, l1.capacity);
    boolean all = fits0 && fits1;
    boolean penalty0 = !fits0 && startsPenalty(l0, b0, q0);
    boolean penalty1 = !fits1 && startsPenalty(l1, b1, q1);
    boolean write = op != CHECK && (all || penalty0 || penalty1);
    if (write) {
      if (!mayWrite) {
        return null;
      }
      if (all) {
        b0 = Ticks.add(b0, q0);
        b1 = Ticks.add(b1, q1);
        BucketRules.hold(l0, s, 0, now, b0);
        BucketRules.hold(l1, s, o1, now, b1);
      } else {
        if (penalty0) {
          b0 = l0.capacity + l0.penalty;   // BucketRules.penalize: held full for the penalty
          BucketRules.hold(l0, s, 0, now, b0);
        }
        if (penalty1) {
          b1 = l1.capacity + l1.penalty;
          BucketRules.hold(l1, s, o1, now, b1);
        }
      }
    }
    return new Metered(limits, cost, all, write, b0, b1, null);
  }

  /** Ticks until a bucket holding {@code after} steps admits {@code q} more; NEVER if it cannot. */
  private static long retryTicks(CompiledLimit l, long after, long q) {
    return q > l.capacity ? NEVER
        : BucketRules.ticksUp(l, Ticks.positiveDifference(Ticks.add(after, q), l.capacity));
  }

  /**
   * A meter decision on buckets ({@link #meterInPlace}): one object, which keeps each bucket's
   * backlog after the decision (two in fields, more in an array) and computes the figures from
   * them when asked for (remaining, retry and reset at each call, each limit's own figures,
   * {@link Decision#perLimit()}, once). Immutable once computed; a race computes equal values.
   */
  static final class Metered extends Decision {
    private final CompiledLimit[] limits;
    private final double cost;
    /** Whether the decision changed the state. */
    final boolean wrote;
    private final long after0;
    private final long after1;
    private final long[] after;
    /** The deciding limit's index once chosen, else -1 (a race chooses the same). */
    private int deciding = -1;
    private List<Decision> computed;

    Metered(CompiledLimit[] limits, double cost, boolean allowed, boolean wrote, long after0,
        long after1, long[] after) {
      super(allowed, false, 0, 0, 0, 0, null, null);
      this.limits = limits;
      this.cost = cost;
      this.wrote = wrote;
      this.after0 = after0;
      this.after1 = after1;
      this.after = after;
    }

    /** Limit i's backlog after the decision, in its steps. */
    private long after(int i) {
      return after != null ? after[i] : i == 0 ? after0 : after1;
    }

    /**
     * The deciding limit, as {@link Engine#figures} chooses it: rejected, the one that asks for
     * the longest wait; admitted, the one with the least share of its capacity left. A limit
     * that admitted before the decision is one that admits after it (a rejection changes only
     * the buckets that start a penalty, which then do not admit).
     */
    private int deciding() {
      int d = deciding;
      if (d >= 0) {
        return d;
      }
      double leastShare = Double.POSITIVE_INFINITY;
      long longestRetry = -1;
      for (int i = 0; i < limits.length; i++) {
        CompiledLimit l = limits[i];
        long q = l.quantum(cost);
        long a = after(i);
        if (!isAllowed() && !BucketRules.admits(a, q, l.capacity)) {
          long retry = retryTicks(l, a, q);
          if (retry > longestRetry) {
            longestRetry = retry;
            d = i;
          }
        } else if (longestRetry < 0) {
          double share = Math.max(0, l.capacity - a) / (double) l.capacity;
          if (share < leastShare) {
            leastShare = share;
            d = i;
          }
        }
      }
      deciding = d;
      return d;
    }

    @Override
    public Limit limit() {
      return limits[deciding()].limit;
    }

    @Override
    public double remaining() {
      int i = deciding();
      CompiledLimit d = limits[i];
      return d.units(Math.max(0, d.capacity - after(i)));
    }

    @Override
    public long resetAfterNanos() {
      int i = deciding();
      CompiledLimit d = limits[i];
      return d.nanos(BucketRules.ticksUp(d, after(i)));
    }

    /** Admitted: 0. Rejected: the longest wait any bucket asks for. */
    @Override
    public long retryAfterNanos() {
      if (isAllowed()) {
        return 0;
      }
      long most = 0;
      for (int i = 0; i < limits.length; i++) {
        CompiledLimit l = limits[i];
        most = Math.max(most, l.nanos(retryTicks(l, after(i), l.quantum(cost))));
      }
      return most;
    }

    @Override
    List<Decision> perLimitOrNull() {
      List<Decision> c = computed;
      if (c == null) {
        int n = limits.length;
        Decision[] each = new Decision[n];
        for (int i = 0; i < n; i++) {
          CompiledLimit l = limits[i];
          long q = l.quantum(cost);
          long a = after(i);
          boolean ok = isAllowed() || BucketRules.admits(a, q, l.capacity);
          each[i] = new Decision(ok, false, l.units(Math.max(0, l.capacity - a)),
              isAllowed() ? 0 : l.nanos(retryTicks(l, a, q)), l.nanos(BucketRules.ticksUp(l, a)),
              0, l.limit, null);
        }
        c = List.of(each);
        computed = c;
      }
      return c;
    }
  }

  /**
   * Whether a rejection of {@code q} by bucket l at backlog {@code b} starts its penalty: one it
   * could ever admit, a penalty set, and none in force (a held bucket is over-full).
   */
  private static boolean startsPenalty(CompiledLimit l, long b, long q) {
    return q <= l.capacity && l.penalty > 0 && b <= l.capacity;
  }

  private static int offset(CompiledLimit[] limits, int i) {
    int o = 0;
    for (int j = 0; j < i; j++) {
      o += limits[j].slots;
    }
    return o;
  }

  /**
   * The per-limit figures of a meter decision, computed on first use from the states before and
   * after it (never changed afterwards). Immutable once computed; a race computes equal values.
   */
  static final class PerLimit extends AbstractList<Decision>
      implements RandomAccess {
    private final CompiledLimit[] limits;
    private final long[] before;
    private final long[] after;
    private final long now;
    private final double cost;
    private final boolean allowed;
    private List<Decision> computed;

    PerLimit(CompiledLimit[] limits, long[] before, long[] after, long now, double cost,
        boolean allowed) {
      this.limits = limits;
      this.before = before;
      this.after = after;
      this.now = now;
      this.cost = cost;
      this.allowed = allowed;
    }

    private List<Decision> all() {
      List<Decision> c = computed;
      if (c == null) {
        int n = limits.length;
        Decision[] each = new Decision[n];
        int o = 0;
        for (int i = 0; i < n; i++) {
          CompiledLimit l = limits[i];
          long q = l.quantum(cost);
          boolean ok = allowed || l.rules.fits(l, before, o, now, q);
          long retry = allowed ? 0 : retryAfter(l, after, o, now, q);
          each[i] = new Decision(ok, false, l.units(l.rules.remaining(l, after, o, now)),
              l.nanos(retry), l.nanos(l.rules.resetAfter(l, after, o, now)), 0, l.limit, null);
          o += l.slots;
        }
        c = List.of(each);
        computed = c;
      }
      return c;
    }

    @Override
    public Decision get(int index) {
      return all().get(index);
    }

    @Override
    public int size() {
      return limits.length;
    }
  }

  /**
   * A lease: takes up to {@code want} grains of {@code cost} from every limit at once, as many as
   * all of them hold room for now, charged as admissions are, and returns how many. A release
   * gives {@code want} grains back: each bucket's backlog falls by them, never below empty, and a
   * bucket held by a penalty keeps its hold. Buckets only (a window has no rate to lease from);
   * neither operation starts a penalty. Writes the state to keep into {@code next}.
   */
  static long lease(CompiledLimit[] limits, long[] state, long now, int op, double cost, long want,
      long[] next) {
    return lease(limits, state, now, op, quanta(limits, cost), want, next);
  }

  /** As above, with each limit's quantum of the cost given. */
  static long lease(CompiledLimit[] limits, long[] state, long now, int op, long[] quanta,
      long want, long[] next) {
    System.arraycopy(state, 0, next, 0, state.length);
    for (CompiledLimit l : limits) {
      if (l.kind != CompiledLimit.BUCKET) {
        throw new UnsupportedOperationException("leases take from a leak rate, and limit '"
            + l.limit.name() + "' (" + l.limit.algorithm().id() + ") has none");
      }
    }
    if (want <= 0) {
      return 0;
    }
    long granted = want;
    int o = 0;
    if (op == LEASE) {
      for (int i = 0; i < limits.length; i++) {
        CompiledLimit l = limits[i];
        granted = Math.min(granted, BucketRules.grainsThatFit(l, state, o, now, quanta[i]));
        o += l.slots;
      }
      if (granted == 0) {
        return 0;
      }
    }
    o = 0;
    for (int i = 0; i < limits.length; i++) {
      CompiledLimit l = limits[i];
      long q = quanta[i];
      if (op == LEASE) {
        BucketRules.take(l, state, o, now, granted * q, next);
      } else {
        BucketRules.giveBack(l, state, o, now, want, q, next);
      }
      o += l.slots;
    }
    return granted;
  }

  /**
   * Each limit's queue ahead of a reservation, in its own steps: the longest backlog among the
   * limits of its scale, and the others' waits rounded up to whole ticks.
   */
  static long[] queues(CompiledLimit[] limits, long[] state, long now) {
    int n = limits.length;
    long[] backlog = new long[n];
    int o = 0;
    for (int i = 0; i < n; i++) {
      backlog[i] = BucketRules.backlog(limits[i], state, o, now);
      o += limits[i].slots;
    }
    long[] queue = new long[n];
    for (int j = 0; j < n; j++) {
      CompiledLimit l = limits[j];
      long most = 0;
      for (int i = 0; i < n; i++) {
        most = Math.max(most, limits[i].scale == l.scale ? backlog[i]
            : BucketRules.steps(l, BucketRules.ticksUp(limits[i], backlog[i])));
      }
      queue[j] = most;
    }
    return queue;
  }

  /** Starts the limit's penalty if it has one (the rules decide whether one is in force). */
  private static void penalize(CompiledLimit l, long[] s, int o, long now, long[] next) {
    if (l.penalty > 0) {
      l.rules.penalize(l, s, o, now, next);
    }
  }

  /** Ticks until {@code q} would fit in limit l of state s, or NEVER. */
  private static long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    return q > l.capacity ? NEVER : l.rules.retryAfter(l, s, o, now, q);
  }

  /** Ticks until every limit of this state holds nothing; 0 when the key is idle. */
  static long idleAfter(CompiledLimit[] limits, long[] s, long now) {
    long most = 0;
    int o = 0;
    for (CompiledLimit l : limits) {
      most = Math.max(most, l.rules.resetAfter(l, s, o, now));
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
      double remaining = l.rules.remaining(l, s, o, now);
      each[i] = new Decision(ok[i], fillUp && !ok[i], l.units(remaining), l.nanos(retry),
          l.nanos(l.rules.resetAfter(l, s, o, now)), l.nanos(delayTicks), l.limit, null);
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

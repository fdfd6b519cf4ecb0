package dev.sluice;

import java.util.List;

/*
 * A Group compiled for a clock, and its decision as a pure function of (state, now, op, cost):
 * the group counterpart of Engine.decide.
 *
 * Limits [assured, ceilings..., parent]; the state is their slots in that order: the key's
 * (assured and ceilings) then the group's (the parent). `borrow` is the parent as borrowers see
 * it: the same bucket with its capacity lowered by the reserve.
 *
 *   assured path  assured, every ceiling and the parent fit      → charge all of them
 *   borrowed path otherwise, if every ceiling and `borrow` fit    → charge the ceilings and the parent
 *   else          rejected; nothing changes
 *
 * Figures: remaining is the larger room of the two paths (the most one request could cost and be
 * admitted now); retry-after the earlier instant at which either path would admit; the deciding
 * limit that of the path taken (admitted: the least share left; rejected: the path with the
 * earlier retry, its longest wait).
 */
final class GroupLimits {
  final Group group;
  final CompiledLimit[] limits;
  final CompiledLimit borrow;
  /** The reserve in the parent's steps: its capacity minus {@code borrow}'s. */
  final long reserve;
  /** Slots of the key's state (assured and ceilings); the parent's follow. */
  final int keySlots;
  final int[] offsets;

  GroupLimits(Group group, long ticksPerSecond) {
    this.group = group;
    List<Limit> all = group.limits();
    limits = new CompiledLimit[all.size()];
    offsets = new int[all.size()];
    int o = 0;
    for (int i = 0; i < limits.length; i++) {
      limits[i] = all.get(i).compile(ticksPerSecond);
      offsets[i] = o;
      o += limits[i].slots;
    }
    CompiledLimit parent = limits[limits.length - 1];
    keySlots = offsets[limits.length - 1];
    long borrowCapacity = Ticks.capacityFromUnits(
        group.parent().capacity() - group.reserve(), parent.quantaPerUnit);
    borrowCapacity = Math.max(0, Math.min(parent.capacity, borrowCapacity));
    borrow = parent.withCapacity(borrowCapacity);
    reserve = parent.capacity - borrowCapacity;
  }

  CompiledLimit parent() {
    return limits[limits.length - 1];
  }

  /** A fresh state: every bucket empty. */
  long[] initialState() {
    return Engine.initialState(limits);
  }

  /** The quantum of {@code cost} in each limit. */
  long[] quanta(double cost) {
    return Engine.quanta(limits, cost);
  }

  /** What {@link #path} answers. */
  static final int REJECTED = 0;
  static final int ASSURED = 1;
  static final int BORROWED = 2;

  /**
   * Decides {@code op} (tryAcquire or check) at {@code now}; writes the state to keep into
   * {@code next} (same length as {@code state}, not the same array).
   */
  Decision decide(long[] state, long now, int op, long[] quanta, long[] next) {
    if (op != Engine.TRY_ACQUIRE && op != Engine.CHECK) {
      throw new UnsupportedOperationException(unsupported(op));
    }
    System.arraycopy(state, 0, next, 0, state.length);
    int path = path(state, now, quanta);
    if (op == Engine.TRY_ACQUIRE && path != REJECTED) {
      charge(state, now, quanta, path, next);
    }
    return figures(state, next, now, quanta, path);
  }

  /** The path that admits the cost now, or REJECTED; allocates nothing. */
  int path(long[] s, long now, long[] quanta) {
    return path(keyFits(s, now, quanta), s, now, quanta);
  }

  /** What the key's own limits say: {@link #CEILINGS_FIT} and {@link #ASSURED_FITS} bits. */
  int keyFits(long[] s, long now, long[] quanta) {
    int p = limits.length - 1;
    for (int i = 1; i < p; i++) {
      CompiledLimit l = limits[i];
      if (!l.rules.fits(l, s, offsets[i], now, quanta[i])) {
        return 0;
      }
    }
    CompiledLimit a = limits[0];
    return CEILINGS_FIT | (a.rules.fits(a, s, 0, now, quanta[0]) ? ASSURED_FITS : 0);
  }

  static final int CEILINGS_FIT = 1;
  static final int ASSURED_FITS = 2;

  /** The path, given what the key's own limits say ({@link #keyFits}): only the parent is read. */
  int path(int keyFits, long[] s, long now, long[] quanta) {
    if ((keyFits & CEILINGS_FIT) == 0) {
      return REJECTED;   // a ceiling: on both paths
    }
    int p = limits.length - 1;
    CompiledLimit parent = limits[p];
    if ((keyFits & ASSURED_FITS) != 0
        && parent.rules.fits(parent, s, offsets[p], now, quanta[p])) {
      return ASSURED;
    }
    return borrow.rules.fits(borrow, s, offsets[p], now, quanta[p]) ? BORROWED : REJECTED;
  }

  /**
   * Writes into {@code next} (a copy of {@code s}) the charges of an admission on {@code path}:
   * every limit on the assured path; the ceilings and the parent when borrowed.
   */
  void charge(long[] s, long now, long[] quanta, int path, long[] next) {
    chargeKey(s, now, quanta, path, next);
    chargeParent(s, now, quanta, next);
  }

  /** The key's part of {@link #charge}. */
  void chargeKey(long[] s, long now, long[] quanta, int path, long[] next) {
    for (int i = path == BORROWED ? 1 : 0; i < limits.length - 1; i++) {
      CompiledLimit l = limits[i];
      l.rules.charge(l, s, offsets[i], now, quanta[i], next);
    }
  }

  /** The parent's part of {@link #charge}. */
  void chargeParent(long[] s, long now, long[] quanta, long[] next) {
    int p = limits.length - 1;
    CompiledLimit l = limits[p];
    l.rules.charge(l, s, offsets[p], now, quanta[p], next);
  }

  /**
   * The decision of {@code path}, its figures from the state after it ({@code s}); each limit's
   * own decision says whether it alone admitted on {@code before}.
   */
  Decision figures(long[] before, long[] s, long now, long[] quanta, int path) {
    int n = limits.length;
    int p = n - 1;
    boolean allowed = path != REJECTED;
    boolean borrowed = path == BORROWED;
    Decision[] each = new Decision[n];
    // the two paths' room and wait: assured = every limit; borrowed = ceilings and `borrow`
    double roomAssured = Double.POSITIVE_INFINITY;
    double borrowRoom = borrow.units(borrow.rules.remaining(borrow, s, offsets[p], now));
    long borrowRetry = allowed ? 0
        : borrow.nanos(retryAfter(borrow, s, offsets[p], now, quanta[p]));
    double roomBorrowed = borrowRoom;
    long retryAssured = 0;
    long retryBorrowed = borrowRetry;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      int o = offsets[i];
      double room = l.units(l.rules.remaining(l, s, o, now));
      long retry = allowed ? 0 : l.nanos(retryAfter(l, s, o, now, quanta[i]));
      each[i] = new Decision(l.rules.fits(l, before, o, now, quanta[i]), false, room, retry,
          l.nanos(l.rules.resetAfter(l, s, o, now)), 0, l.limit, null);
      roomAssured = Math.min(roomAssured, room);
      retryAssured = Math.max(retryAssured, retry);
      if (i > 0 && i < p) {
        roomBorrowed = Math.min(roomBorrowed, room);
        retryBorrowed = Math.max(retryBorrowed, retry);
      }
    }
    boolean viaBorrowing = allowed ? borrowed : retryBorrowed < retryAssured;
    // the deciding limit on that path: admitted, the least share left; rejected, the longest wait
    int deciding = -1;
    double best = Double.NaN;
    for (int i = viaBorrowing ? 1 : 0; i < n; i++) {
      boolean threshold = i == p && viaBorrowing;   // the parent, as borrowers see it
      double score;
      if (allowed) {
        score = threshold ? -(borrowRoom / borrow.units(borrow.capacity))
            : -(each[i].remaining() / limits[i].limit.capacity());
      } else {
        score = threshold ? borrowRetry : each[i].retryAfterNanos();
      }
      if (deciding < 0 || score > best) {
        best = score;
        deciding = i;
      }
    }
    Decision d = each[deciding];
    long retryAll = allowed ? 0 : Math.min(retryAssured, retryBorrowed);
    return new Decision(allowed, false, Math.max(roomAssured, roomBorrowed), retryAll,
        d.resetAfterNanos(), 0, d.limit(), List.of(each), false, false, borrowed);
  }

  /** Ticks until {@code q} would fit limit l of state s, or NEVER. */
  private static long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    return q > l.capacity ? Engine.NEVER : l.rules.retryAfter(l, s, o, now, q);
  }

  /** Ticks until the key's part of the state holds nothing; 0 when idle. */
  long keyIdleAfter(long[] s, long now) {
    long most = 0;
    for (int i = 0; i < limits.length - 1; i++) {
      CompiledLimit l = limits[i];
      most = Math.max(most, l.rules.resetAfter(l, s, offsets[i], now));
    }
    return most;
  }

  /** Ticks until the parent's part of the state holds nothing; 0 when idle. */
  long parentIdleAfter(long[] s, long now) {
    CompiledLimit l = parent();
    return l.rules.resetAfter(l, s, keySlots, now);
  }

  static String unsupported(int op) {
    String name = op == Engine.FILL_UP ? "fillUp" : op == Engine.RESERVE ? "reserve"
        : op == Engine.LEASE || op == Engine.RELEASE ? "leases" : "operation " + op;
    return name + " is not available on a group: a group decides by path (assured or borrowed),"
        + " which only tryAcquire, check and acquire ask";
  }
}

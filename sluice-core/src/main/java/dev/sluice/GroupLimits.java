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

  /** Slots of the whole state. */
  int stateLength() {
    return keySlots + parent().slots;
  }

  /** A fresh state: every bucket empty. */
  long[] initialState() {
    return Engine.initialState(limits);
  }

  /** The quantum of {@code cost} in each limit. */
  long[] quanta(double cost) {
    return Engine.quanta(limits, cost);
  }

  /**
   * Decides {@code op} (tryAcquire or check) at {@code now}; writes the state to keep into
   * {@code next} (same length as {@code state}, not the same array).
   */
  Decision decide(long[] state, long now, int op, long[] quanta, long[] next) {
    if (op != Engine.TRY_ACQUIRE && op != Engine.CHECK) {
      throw new UnsupportedOperationException(unsupported(op));
    }
    System.arraycopy(state, 0, next, 0, state.length);
    int n = limits.length;
    int p = n - 1;
    boolean[] fits = new boolean[n];
    boolean ceilings = true;
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      fits[i] = l.rules.fits(l, state, offsets[i], now, quanta[i]);
      if (i > 0 && i < p) {
        ceilings &= fits[i];
      }
    }
    boolean borrowFits = borrow.rules.fits(borrow, state, offsets[p], now, quanta[p]);
    boolean assuredPath = fits[0] && ceilings && fits[p];
    boolean borrowed = !assuredPath && ceilings && borrowFits;
    boolean allowed = assuredPath || borrowed;
    if (op == Engine.TRY_ACQUIRE && allowed) {
      for (int i = borrowed ? 1 : 0; i < n; i++) {
        CompiledLimit l = limits[i];
        l.rules.charge(l, state, offsets[i], now, quanta[i], now, next);
      }
    }
    return figures(next, now, quanta, fits, allowed, borrowed);
  }

  private Decision figures(long[] s, long now, long[] quanta, boolean[] fits, boolean allowed,
      boolean borrowed) {
    int n = limits.length;
    int p = n - 1;
    Decision[] each = new Decision[n];
    double[] room = new double[n];
    long[] retry = new long[n];
    for (int i = 0; i < n; i++) {
      CompiledLimit l = limits[i];
      int o = offsets[i];
      double remaining = l.rules.remaining(l, s, o, now);
      room[i] = l.units(remaining);
      retry[i] = allowed ? 0 : retryAfter(l, s, o, now, quanta[i]);
      each[i] = new Decision(fits[i], false, room[i], l.nanos(retry[i]),
          l.nanos(l.rules.resetAfter(l, s, o, now)), 0, l.limit, null);
    }
    double borrowRoom = borrow.units(borrow.rules.remaining(borrow, s, offsets[p], now));
    long borrowRetry = allowed ? 0 : retryAfter(borrow, s, offsets[p], now, quanta[p]);

    // the two paths' room and wait: assured = every limit; borrowed = ceilings and `borrow`
    double roomAssured = Double.POSITIVE_INFINITY;
    double roomBorrowed = borrowRoom;
    long retryAssured = 0;
    long retryBorrowed = borrow.nanos(borrowRetry);
    for (int i = 0; i < n; i++) {
      roomAssured = Math.min(roomAssured, room[i]);
      retryAssured = Math.max(retryAssured, each[i].retryAfterNanos());
      if (i > 0 && i < p) {
        roomBorrowed = Math.min(roomBorrowed, room[i]);
        retryBorrowed = Math.max(retryBorrowed, each[i].retryAfterNanos());
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
            : -(room[i] / limits[i].limit.capacity());
      } else {
        score = threshold ? borrow.nanos(borrowRetry) : each[i].retryAfterNanos();
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

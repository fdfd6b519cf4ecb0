package dev.sluice;

import dev.sluice.internal.KeyTable;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/*
 * The in-memory store.
 *
 * Keys map to cells in a ConcurrentHashMap; there is no global lock on the decision path.
 *
 * A single bucket, at any rate, decides lock-free: one CAS on one long (LockFreeBucket). Several
 * limits or a window: the cell holds the state slots and decides under its own spin lock
 * (SlotsCell), checks and rejections of buckets without it when the clock order allows; the
 * meter on buckets changes the slots in place and allocates only its figures, from which each
 * limit's own are computed when asked for (Engine.meterInPlace).
 *
 * A key enters the map only when a decision writes to it: checks, rejections and costs that can
 * never fit leave an unknown key unknown, so they allocate nothing.
 *
 * Three parts: this class (the API and the general path), LockFreeBucket (one bucket, one CAS
 * per decision) and KeyTable (the map, its exact bound, sweeping and eviction).
 */
final class InMemoryRateLimiter extends AbstractRateLimiter {
  static final long TICKS_PER_SECOND = 1_000_000_000L;

  private final CompiledLimit[] compiled;
  /** Several limits, every one a bucket: the meter takes Engine.meterInPlace. */
  private final boolean buckets;
  /** The lock-free path of a single bucket; null when the general path is used. */
  private final LockFreeBucket lockFree;
  private final KeyTable table;

  InMemoryRateLimiter(List<Limit> limits, Clock clock, Scheduler scheduler, long maximumKeys,
      boolean fastPath) {
    this(limits, clock, scheduler, maximumKeys, fastPath, Long.MAX_VALUE);
  }

  /** As above; a single bucket's cells are rebased after {@code rebaseAge} ns at the latest. */
  InMemoryRateLimiter(List<Limit> limits, Clock clock, Scheduler scheduler, long maximumKeys,
      boolean fastPath, long rebaseAge) {
    super(limits, clock, scheduler);
    this.compiled = new CompiledLimit[limits.size()];
    for (int i = 0; i < compiled.length; i++) {
      compiled[i] = limits.get(i).compile(TICKS_PER_SECOND);
    }
    // this.clock: the monotonic guard over the user's clock, not the argument
    this.table = new KeyTable(this.clock, maximumKeys);
    this.buckets = compiled.length > 1 && Engine.canReserve(compiled);
    this.lockFree = fastPath && compiled.length == 1 && compiled[0].kind == CompiledLimit.BUCKET
        ? new LockFreeBucket(compiled[0], this.clock, table, rebaseAge) : null;
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    return decide(key, Engine.TRY_ACQUIRE, cost);
  }

  @Override
  public Decision tryAcquire(String key) {
    return decide(key, Engine.TRY_ACQUIRE, 1);
  }

  @Override
  public Decision check(String key, double cost) {
    return decide(key, Engine.CHECK, cost);
  }

  @Override
  public Decision fillUp(String key, double cost) {
    return decide(key, Engine.FILL_UP, cost);
  }

  @Override
  public Decision reserve(String key, double cost) {
    return decide(key, Engine.RESERVE, cost);
  }

  /** A single bucket's bound limiter skips the key's lookup (LockFreeBucket); others forward. */
  @Override
  public KeyLimiter forKey(String key) {
    return lockFree != null ? lockFree.bind(this, key) : new ForwardingKeyLimiter(this, key);
  }

  @Override
  public void reset(String key) {
    if (lockFree != null) {
      lockFree.reset(Checks.key(key));
      return;
    }
    table.forget(Checks.key(key));
  }

  @Override
  public LimiterStats stats() {
    return new LimiterStats(0, 0, false, table.evictedIdle(), table.evictedBusy(), 0, table.size());
  }

  /**
   * Number of keys held now (idle ones included until swept), counting slots reserved by inserts
   * in progress: an upper bound on the map's size at every instant, exact when no insert runs.
   */
  long size() {
    return table.size();
  }

  /** The map's own count (for tests: equals {@link #size()} when no insert is in progress). */
  long mappedKeys() {
    return table.mappedKeys();
  }

  long evictedIdle() {
    return table.evictedIdle();
  }

  long evictedBusy() {
    return table.evictedBusy();
  }

  private Decision decide(String key, int op, double cost) {
    Checks.key(key);
    if (cost != 1) {
      Checks.cost(cost);
    }
    if (lockFree != null) {
      return lockFree.decide(key, op, cost);
    }
    if (buckets && (op == Engine.TRY_ACQUIRE || op == Engine.CHECK)) {
      return meter(key, op, cost);
    }
    return decideOther(key, op, cost);
  }

  /** The meter on several buckets: the decision, one object (Engine.Metered). */
  private Engine.Metered meter(String key, int op, double cost) {
    for (;;) {
      SlotsCell cell = (SlotsCell) table.get(key);
      if (cell == null) {
        long[] fresh = Engine.initialState(compiled);
        Engine.Metered m = decideAbsent(key, fresh,
            Engine.meterInPlace(compiled, fresh, clock.nanoTime(), op, cost, false),
            born -> born.meterLocked(op, cost));
        if (m != null) {
          return m;
        }
        continue;
      }
      Engine.Metered m = cell.meter(op, cost);
      if (m != null) {
        return m;
      }
      table.remove(key, cell);
    }
  }

  /** Every other decision: under the key's lock, on a new state array. */
  private Decision decideOther(String key, int op, double cost) {
    for (;;) {
      SlotsCell cell = (SlotsCell) table.get(key);
      if (cell == null) {
        long[] fresh = Engine.initialState(compiled);
        long[] next = new long[fresh.length];
        Decision d = decide(compiled, fresh, clock.nanoTime(), op, cost, next);
        d = decideAbsent(key, fresh, op == Engine.CHECK || Arrays.equals(fresh, next) ? d : null,
            born -> born.decideLocked(op, cost));
        if (d != null) {
          return d;
        }
        continue;
      }
      Decision d = cell.decide(op, cost);
      if (d != null) {
        return d;
      }
      table.remove(key, cell);
    }
  }

  /**
   * A decision on a key found absent, which is an empty one. One that writes nothing
   * ({@code readOnly}, not null, decided on {@code fresh}) is the answer, linearizable at its clock
   * reading if the key is still absent after it; one that writes (a null {@code readOnly})
   * publishes a new cell holding {@code fresh}, already locked, and decides inside it
   * ({@code inCell}), clock read included. Null when another decision got there first: the caller
   * looks again.
   */
  private <T> T decideAbsent(String key, long[] fresh, T readOnly, Function<SlotsCell, T> inCell) {
    if (readOnly != null) {
      return table.containsKey(key) ? null : readOnly;
    }
    SlotsCell born = new SlotsCell(compiled, buckets, clock, fresh);
    T d;
    born.lock();
    try {
      if (!table.insert(key, born)) {
        return null;
      }
      d = inCell.apply(born);
    } finally {
      born.unlock();
    }
    table.inserted();
    return d;
  }

  /** Whether single buckets decide lock-free (for tests). */
  boolean isLockFree() {
    return lockFree != null;
  }

  /** The key's state as the engine keeps it, or null if the key is absent (for tests). */
  long[] state(String key) {
    if (lockFree != null) {
      return lockFree.state(key);
    }
    KeyTable.Cell cell = table.get(key);
    if (cell == null) {
      return null;
    }
    long[] s = ((SlotsCell) cell).snapshot();
    return s == null ? null : s.clone();
  }

  /** Puts the key's state as the engine keeps it at {@code now}; null removes it (for tests). */
  void put(String key, long[] state, long now) {
    if (lockFree != null) {
      lockFree.reset(key);
      if (state != null) {
        lockFree.put(key, state, now);
      }
      return;
    }
    reset(key);
    if (state != null && !table.insert(key, new SlotsCell(compiled, buckets, clock, state.clone()))) {
      throw new IllegalStateException("key " + key + " appeared while being put");
    }
  }

  /** The engine's decision; the meter takes the path without intermediate arrays. */
  private static Decision decide(CompiledLimit[] limits, long[] state, long now, int op,
      double cost, long[] next) {
    return op == Engine.TRY_ACQUIRE || op == Engine.CHECK
        ? Engine.meter(limits, state, now, op, cost, next)
        : Engine.decide(limits, state, now, op, cost, next);
  }

  /**
   * State slots of several limits or a window, decided under the cell's lock (the clock is read
   * inside it, so decisions on a key commit in the order of their clock readings).
   *
   * <p>The lock is a sequence number changed by CAS (odd while held), not the cell's monitor: a
   * decision holds it for tens of nanoseconds, and a thread that finds it taken parks for the
   * shortest time the OS allows, as a lost CAS does on the lock-free path. A monitor under
   * contention inflates and parks its waiters in the kernel, which costs more than the decision
   * it guards.
   *
   * <p>The meter on buckets (tryAcquire, check) changes the state in place and returns figures
   * that hold no reference to it (Engine.meterInPlace), so it allocates nothing but those; the
   * other decisions write a new array. Reads without the lock are validated by the sequence
   * number, as a seqlock's: a read that raced a writer is thrown away.
   */
  static final class SlotsCell extends KeyTable.Cell {
    private static final VarHandle SEQ;

    static {
      try {
        SEQ = MethodHandles.lookup().findVarHandle(SlotsCell.class, "seq", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final CompiledLimit[] limits;
    private final Clock clock;
    /** Even while free, odd while a thread holds the cell; written only through SEQ. */
    @SuppressWarnings("unused")
    private volatile int seq;
    /** Under the lock: read and written; without it: read only, and validated by {@link #seq}. */
    private long[] state;
    /** The clock reading of the last decision that held the lock (a write's, or later). */
    private long writtenAt = Long.MIN_VALUE;
    private volatile boolean dead;
    /** Whether the last meter decision rejected (a hint, racy and harmless). */
    private boolean rejecting;

    SlotsCell(CompiledLimit[] limits, boolean buckets, Clock clock, long[] state) {
      this.limits = limits;
      this.clock = clock;
      this.state = state;
    }

    void lock() {
      int v = (int) SEQ.getOpaque(this);
      if ((v & 1) != 0 || !SEQ.compareAndSet(this, v, v + 1)) {
        lockContended();
      }
    }

    /**
     * Parks for the shortest time the OS allows between attempts, without spinning first: the
     * holder's core then keeps the cell's cache line for many decisions (spinning up to 64 times
     * first gave two threads on one two-limit key 13-17 decisions/us against 16-19 without,
     * RatesBenchmark, 2026-11-27).
     */
    private void lockContended() {
      for (;;) {
        LockSupport.parkNanos(1);
        int v = (int) SEQ.getOpaque(this);
        if ((v & 1) == 0 && SEQ.compareAndSet(this, v, v + 1)) {
          return;
        }
      }
    }

    /** Only the holder writes the sequence number: one plain read, one release. */
    void unlock() {
      SEQ.setRelease(this, (int) SEQ.get(this) + 1);
    }

    /** A copy of the state now; null if the cell is dead. */
    long[] snapshot() {
      lock();
      try {
        return dead ? null : state.clone();
      } finally {
        unlock();
      }
    }

    /**
     * The meter on buckets: its figures, or null if the cell is dead and the caller must start
     * over.
     *
     * <p>A check, and a decision on a key that has been rejecting, first try without the lock:
     * read the clock (t), then the sequence number (even: no writer), the state and the reading
     * the last locked decision was made at (w); if w is not after t, the decision writes nothing
     * (a check, a rejection that starts no penalty) and the sequence number is unchanged after
     * the reads, it is the answer, in the order of clock readings: every decision that read the
     * clock before t took the lock before that, so it either held it when the sequence number
     * was read (sending this one to the lock) or committed before (and is in the state); one
     * that took the lock after it reads the clock after t and comes after this one, unless it
     * committed before the validation, which fails. Anything else is decided under the lock.
     * InMemorySeveralBucketsLinearizabilityTest races the clock.
     */
    Engine.Metered meter(int op, double cost) {
      if (op == Engine.CHECK || rejecting) {
        long now = clock.nanoTime();
        int v = (int) SEQ.getAcquire(this);
        if ((v & 1) == 0) {
          long[] s = state;
          long w = writtenAt;
          if ((w == Long.MIN_VALUE || w - now <= 0) && !dead) {
            Engine.Metered m = Engine.meterInPlace(limits, s, now, op, cost, false);
            VarHandle.acquireFence();   // the reads above before the validation below
            if (m != null && (int) SEQ.getVolatile(this) == v) {
              return m;
            }
          }
        }
      }
      lock();
      try {
        return meterLocked(op, cost);
      } finally {
        unlock();
      }
    }

    /** {@link #meter} with the lock held. */
    Engine.Metered meterLocked(int op, double cost) {
      if (dead) {
        return null;
      }
      long now = clock.nanoTime();
      writtenAt = now;
      Engine.Metered m = Engine.meterInPlace(limits, state, now, op, cost, true);
      if (op == Engine.TRY_ACQUIRE) {
        rejecting = !m.isAllowed();
      }
      return m;
    }

    /** Any decision, on a new state array: the Decision, or null if the cell is dead. */
    Decision decide(int op, double cost) {
      lock();
      try {
        return decideLocked(op, cost);
      } finally {
        unlock();
      }
    }

    /** {@link #decide} with the lock held. */
    Decision decideLocked(int op, double cost) {
      if (dead) {
        return null;
      }
      long[] s = state;
      long now = clock.nanoTime();
      long[] next = new long[s.length];
      Decision d = InMemoryRateLimiter.decide(limits, s, now, op, cost, next);
      if (op != Engine.CHECK) {
        writtenAt = now;
        state = next;
      }
      return d;
    }

    @Override
    protected boolean killIfIdle(long now) {
      lock();
      try {
        if (!dead && Engine.idleAfter(limits, state, now) == 0) {
          dead = true;
        }
        return dead;
      } finally {
        unlock();
      }
    }

    @Override
    protected boolean kill() {
      lock();
      try {
        dead = true;
        return true;
      } finally {
        unlock();
      }
    }

    @Override
    protected long pressure(long now) {
      lock();
      try {
        return dead ? 0 : Engine.idleAfter(limits, state, now);
      } finally {
        unlock();
      }
    }
  }
}

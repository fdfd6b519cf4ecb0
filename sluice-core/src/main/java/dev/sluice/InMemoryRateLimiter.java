package dev.sluice;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/*
 * The in-memory store.
 *
 * Keys map to cells in a ConcurrentHashMap; there is no global lock on the decision path.
 *
 * A single bucket, at any rate, decides lock-free: one CAS on one long (LockFreeBucket). Several
 * limits or a window: the cell holds the state slots and decides under its own spin lock
 * (SlotsCell), checks and rejections of buckets without it when the clock order allows; the
 * meter builds each limit's own figures only when asked for (Engine.meter).
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
  /** Several limits, every one a bucket: the meter takes Engine.meterBuckets. */
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

  @Override
  public void reset(String key) {
    if (lockFree != null) {
      lockFree.reset(Checks.key(key));
      return;
    }
    KeyTable.Cell cell = table.get(Checks.key(key));
    if (cell != null) {
      cell.kill();
      table.remove(key, cell);
    }
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
    for (;;) {
      SlotsCell cell = (SlotsCell) table.get(key);
      if (cell == null) {
        // An absent key is an empty one. A decision that writes nothing is answered from a fresh
        // state (linearizable at the clock reading if the key is still absent after it); one that
        // writes publishes a new cell already locked and decides inside, clock read included.
        long[] fresh = Engine.initialState(compiled);
        long[] next = new long[fresh.length];
        Decision d = decide(compiled, fresh, clock.nanoTime(), op, cost, next);
        if (op == Engine.CHECK || Arrays.equals(fresh, next)) {
          if (!table.containsKey(key)) {
            return d;
          }
          continue;
        }
        SlotsCell born = new SlotsCell(compiled, buckets, clock, fresh);
        born.lock();
        try {
          if (!table.insert(key, born)) {
            continue;
          }
          d = born.decideLocked(op, cost);
        } finally {
          born.unlock();
        }
        table.inserted();
        return d;
      }
      Decision d = cell.decide(op, cost);
      if (d != null) {
        return d;
      }
      table.remove(key, cell);
    }
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
   * inside it, so decisions on a key commit in the order of their clock readings). Each decision
   * writes a new array instead of changing the old one, so that a decision's per-limit figures,
   * computed when first asked for (Engine.meter), read the states it saw.
   *
   * <p>The lock is one CAS on an int, not the cell's monitor: a decision holds it for tens of
   * nanoseconds, and a thread that finds it taken spins briefly, then parks for the shortest time
   * the OS allows, as a lost CAS does on the lock-free path. A monitor under contention inflates
   * and parks its waiters in the kernel, which costs more than the decision it guards.
   */
  static final class SlotsCell extends KeyTable.Cell implements Engine.StateSink {
    private static final VarHandle LOCK;
    private static final VarHandle STATE;
    private static final VarHandle WRITTEN_AT;
    private static final int SPINS = 64;

    static {
      try {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        LOCK = lookup.findVarHandle(SlotsCell.class, "locked", int.class);
        STATE = lookup.findVarHandle(SlotsCell.class, "state", long[].class);
        WRITTEN_AT = lookup.findVarHandle(SlotsCell.class, "writtenAt", long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final CompiledLimit[] limits;
    private final Clock clock;
    /** Every limit is a bucket: the meter takes Engine.meterBuckets. */
    private final boolean buckets;
    /** 1 while a thread holds the cell; written only through LOCK. */
    @SuppressWarnings("unused")
    private volatile int locked;
    /**
     * Written under the lock with release semantics, never changed in place: read without it, by
     * read-only decisions, with acquire semantics (STATE).
     */
    private long[] state;
    /**
     * The clock reading of the decision that wrote {@link #state}, released just before it (so a
     * reader that acquires a state sees this reading or a later one).
     */
    private long writtenAt = Long.MIN_VALUE;
    /** Under the lock: the clock reading of the decision in progress. */
    private long deciding;
    private volatile boolean dead;
    /** Whether the last meter decision rejected (a hint, racy and harmless). */
    private boolean rejecting;

    SlotsCell(CompiledLimit[] limits, boolean buckets, Clock clock, long[] state) {
      this.limits = limits;
      this.buckets = buckets;
      this.clock = clock;
      this.state = state;
    }

    void lock() {
      if (LOCK.compareAndSet(this, 0, 1)) {
        return;
      }
      for (int spins = 0; ; spins++) {
        if ((int) LOCK.getOpaque(this) == 0 && LOCK.compareAndSet(this, 0, 1)) {
          return;
        }
        if (spins < SPINS) {
          Thread.onSpinWait();
        } else {
          LockSupport.parkNanos(1);
        }
      }
    }

    void unlock() {
      LOCK.setRelease(this, 0);
    }

    /** Under the lock: the state the decision keeps. */
    @Override
    public void keep(long[] next) {
      WRITTEN_AT.setRelease(this, deciding);
      STATE.setRelease(this, next);
    }

    /** The state now, never changed in place; null if the cell is dead. */
    long[] snapshot() {
      lock();
      try {
        return dead ? null : state;
      } finally {
        unlock();
      }
    }

    /**
     * The decision, or null if the cell is dead and the caller must start over.
     *
     * <p>A check, and a meter decision on a key that has been rejecting, first try without the
     * lock: read the clock (t), see the lock free, read the state and the reading it was written
     * at (w); if w is not after t, and the decision writes nothing (a check, a rejection that
     * starts no penalty), it is the answer, in the order of clock readings: every decision that
     * read the clock before t has either committed before the state was read (and is in it) or
     * held the lock when it was seen free (it takes the lock before reading the clock), which
     * sends this one to the lock; a decision that read the clock after t comes after it. Anything
     * else is decided under the lock. InMemorySeveralBucketsLinearizabilityTest races the clock.
     */
    Decision decide(int op, double cost) {
      if (buckets && (op == Engine.CHECK || (op == Engine.TRY_ACQUIRE && rejecting))) {
        long now = clock.nanoTime();
        if ((int) LOCK.getVolatile(this) == 0) {
          long[] s = (long[]) STATE.getAcquire(this);
          long w = (long) WRITTEN_AT.getAcquire(this);
          if ((w == Long.MIN_VALUE || w - now <= 0) && !dead) {
            Decision d = Engine.meterBuckets(limits, s, now, op, cost, null);
            if (d != null) {
              return d;
            }
          }
        }
      }
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
      deciding = now;
      if (buckets && (op == Engine.TRY_ACQUIRE || op == Engine.CHECK)) {
        Decision d = Engine.meterBuckets(limits, s, now, op, cost, this);
        if (op == Engine.TRY_ACQUIRE) {
          rejecting = !d.isAllowed();
        }
        return d;
      }
      long[] next = new long[s.length];
      Decision d = InMemoryRateLimiter.decide(limits, s, now, op, cost, next);
      if (op != Engine.CHECK) {
        keep(next);
      }
      return d;
    }

    @Override
    boolean killIfIdle(long now) {
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
    void kill() {
      lock();
      try {
        dead = true;
      } finally {
        unlock();
      }
    }

    @Override
    long pressure(long now) {
      lock();
      try {
        return dead ? 0 : Engine.idleAfter(limits, state, now);
      } finally {
        unlock();
      }
    }
  }
}

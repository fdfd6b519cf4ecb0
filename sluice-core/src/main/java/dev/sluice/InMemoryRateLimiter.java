package dev.sluice;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/*
 * The in-memory store.
 *
 * Keys map to cells in a ConcurrentHashMap; there is no global lock on the decision path.
 *
 * One bucket limit (leaky, token, GCRA) whose unit of cost is a whole number of nanoseconds
 * (scale 1: 1,000/s, 10^9/s, 7/min, but not 1.5/s or 7/s): the cell is one volatile long, E, the
 * instant the bucket is empty, updated by compare-and-set. A decision reads the clock, then E, computes and
 * CASes at once; it takes effect at the CAS (or at the read of E if it writes nothing) as of the
 * clock reading just before. Racing decisions may commit out of the order of their readings by
 * those nanoseconds; accounting stays exact because a non-empty bucket's update, E + q, does
 * not depend on the time. Lincheck checks the operations racing at one instant. No allocation but the Decision, which escape analysis removes when the
 * caller does not keep it: the path returns one long and a single small method builds the
 * Decision.
 *
 * Several limits, windows, or a bucket counted in fractions of a nanosecond (its state is two
 * longs, E and the remainder R): the cell holds the state slots and decides under its own
 * monitor.
 *
 * A key enters the map only when a decision writes to it: checks, rejections and costs that can
 * never fit leave an unknown key unknown, so they allocate nothing.
 *
 * Eviction. A cell leaves the map only after it is marked dead (E = DEAD, or dead = true under
 * the monitor), and only an idle cell is marked dead unless the key bound forces it. A decision
 * that finds a dead cell helps remove it and starts over on a fresh cell, so no charge is ever
 * applied to a cell that has left the map: nothing admitted is lost or counted twice. Idle cells
 * are swept 16 at a time on about every 64th new key.
 *
 * The key bound is exact under any number of threads: a new key first reserves a slot in `size`
 * (cells in the map plus slots reserved for cells about to enter it) by CAS, never past
 * maximumKeys. A thread that finds no free slot takes the eviction lock (it waits for it; it does
 * not give up) and frees a batch of slots, 1% of the bound (at most 1,024), so that the threads
 * behind it find room without evicting. Each step looks at the next 256 entries of a cursor that
 * walks the map and removes every idle one; only if none of them is idle does it evict the 32 of
 * them closest to empty (their levels are forgotten; counted as evictedBusy): 8 entries looked at
 * per busy key evicted. Work per new key is bounded and amortized; the map never holds
 * more than maximumKeys cells.
 */
final class InMemoryRateLimiter extends AbstractRateLimiter {
  static final long TICKS_PER_SECOND = 1_000_000_000L;
  private static final long DEAD = Long.MIN_VALUE;
  private static final int SAMPLE = 16;
  /**
   * Entries one eviction step looks at; busy keys go only if none of them is idle. Large because
   * keys with similar names (user:1, user:2, ...) sit side by side in the map's order.
   */
  private static final int EVICTION_SAMPLE = 256;
  /** Busy keys one step may evict, the ones closest to empty among its sample. */
  private static final int BUSY_VICTIMS = 32;
  /** Largest batch of slots one eviction pass frees. */
  private static final long MAX_EVICTION_BATCH = 1024;

  private final CompiledLimit[] compiled;
  /** The single bucket limit of the fast path; null when the general path is used. */
  private final CompiledLimit bucket;
  private final long maximumKeys;
  /** Slots one eviction pass frees: 1% of the bound, between 1 and {@link #MAX_EVICTION_BATCH}. */
  private final long evictionBatch;
  private final ConcurrentHashMap<String, Cell> cells = new ConcurrentHashMap<>();
  /** Cells in the map plus slots reserved for cells about to be inserted; never above maximumKeys. */
  private final AtomicLong size = new AtomicLong();
  private final AtomicLong evictedIdle = new AtomicLong();
  private final AtomicLong evictedBusy = new AtomicLong();
  private final ReentrantLock sweepLock = new ReentrantLock();
  private Iterator<Map.Entry<String, Cell>> cursor;

  InMemoryRateLimiter(List<Limit> limits, Clock clock, Scheduler scheduler, long maximumKeys,
      boolean fastPath) {
    super(limits, clock, scheduler);
    this.compiled = new CompiledLimit[limits.size()];
    for (int i = 0; i < compiled.length; i++) {
      compiled[i] = limits.get(i).compile(TICKS_PER_SECOND);
    }
    this.bucket = fastPath && compiled.length == 1 && compiled[0].kind == CompiledLimit.BUCKET
        && compiled[0].scale == 1 ? compiled[0] : null;
    this.maximumKeys = maximumKeys;
    this.evictionBatch = Math.max(1, Math.min(MAX_EVICTION_BATCH, maximumKeys / 100));
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
    Cell cell = cells.get(Checks.key(key));
    if (cell != null) {
      cell.kill();
      remove(key, cell);
    }
  }

  @Override
  public LimiterStats stats() {
    return new LimiterStats(0, 0, false, evictedIdle.get(), evictedBusy.get(), 0, size.get());
  }

  /**
   * Number of keys held now (idle ones included until swept), counting slots reserved by inserts
   * in progress: an upper bound on the map's size at every instant, exact when no insert runs.
   */
  long size() {
    return size.get();
  }

  /** The map's own count (for tests: equals {@link #size()} when no insert is in progress). */
  long mappedKeys() {
    return cells.mappingCount();
  }

  long evictedIdle() {
    return evictedIdle.get();
  }

  long evictedBusy() {
    return evictedBusy.get();
  }

  private Decision decide(String key, int op, double cost) {
    Checks.key(key);
    if (cost != 1) {
      Checks.cost(cost);
    }
    if (bucket != null) {
      long q = bucket.quantum(cost);
      return bucketDecision(bucket, op, q, decideBucket(key, op, q));
    }
    for (;;) {
      SlotsCell cell = (SlotsCell) cells.get(key);
      if (cell == null) {
        // An absent key is an empty one. A decision that writes nothing is answered from a fresh
        // state (linearizable at the clock reading if the key is still absent after it); one that
        // writes publishes a new cell already locked and decides inside, clock read included.
        long[] fresh = Engine.initialState(compiled);
        long[] next = new long[fresh.length];
        Decision d = Engine.decide(compiled, fresh, clock.nanoTime(), op, cost, next);
        if (op == Engine.CHECK || Arrays.equals(fresh, next)) {
          if (!cells.containsKey(key)) {
            return d;
          }
          continue;
        }
        SlotsCell born = new SlotsCell(compiled, clock, fresh);
        synchronized (born) {
          if (!insert(key, born)) {
            continue;
          }
          d = born.decide(op, cost);
        }
        inserted();
        return d;
      }
      Decision d = cell.decide(op, cost);
      if (d != null) {
        return d;
      }
      remove(key, cell);
    }
  }

  // ------------------------------------------------------------------ one bucket, lock-free

  // Outcome of the lock-free path, one long so that nothing is allocated on the way: the backlog
  // after the operation (at most Ticks.MAX, 61 bits) and two flags.
  private static final long ALLOWED = 1L << 61;
  private static final long REACHED = 1L << 62;
  private static final long BACKLOG = ALLOWED - 1;

  private static long outcome(long backlogAfter, boolean allowed, boolean reached) {
    return Math.min(backlogAfter, Ticks.MAX) | (allowed ? ALLOWED : 0) | (reached ? REACHED : 0);
  }

  /**
   * The one place the lock-free path makes a Decision: small, so that it inlines into the caller
   * and escape analysis can drop the object when the caller only reads it.
   */
  private static Decision bucketDecision(CompiledLimit l, int op, long q, long outcome) {
    long after = outcome & BACKLOG;
    boolean allowed = (outcome & ALLOWED) != 0;
    boolean reached = (outcome & REACHED) != 0;
    long retry = allowed && op != Engine.FILL_UP ? 0
        : q > l.capacity ? Engine.NEVER : Ticks.positiveDifference(Ticks.add(after, q), l.capacity);
    long delay = op == Engine.RESERVE && allowed ? after - q : 0;
    return new Decision(allowed, reached, l.units(Math.max(0, l.capacity - after)), retry, after,
        delay, l.limit, null);
  }

  /**
   * One bucket, lock-free. Reads the clock, then E, then computes and CASes at once (a short
   * window, so that contended CASes rarely fail). The decision takes effect at the CAS, or at the
   * read of E when it writes nothing, as of the clock reading just before; E observed after that
   * reading holds every commit made before it.
   */
  private long decideBucket(String key, int op, long q) {
    CompiledLimit l = bucket;
    long now = clock.nanoTime();
    BucketCell cell = (BucketCell) cells.get(key);
    for (int attempt = 0; ; attempt++) {
      if (attempt > 0) {
        backOff(attempt);
        if (cell == null) {
          cell = (BucketCell) cells.get(key);
        }
      }
      long e = cell == null ? Ticks.NONE : cell.e;
      if (e == DEAD) {
        remove(key, cell);
        cell = (BucketCell) cells.get(key);
        continue;
      }
      long b = BucketRules.backlog(e, now);
      long filled = Ticks.add(b, q);
      if (op == Engine.FILL_UP) {
        boolean reached = filled >= l.capacity;
        long kept = Math.max(b, Math.min(l.capacity, filled));
        if (reached && l.penalty > 0 && q <= l.capacity && b <= l.capacity) {
          kept = Ticks.add(l.capacity, l.penalty);
        }
        if (kept == b || commit(key, cell, e, Ticks.add(now, kept))) {
          return outcome(kept, !reached, reached);
        }
      } else if (filled <= l.capacity) {
        if (op == Engine.CHECK) {
          return outcome(b, true, false);
        }
        if (commit(key, cell, e, Ticks.add(now, filled))) {
          return outcome(filled, true, false);
        }
      } else if (op == Engine.CHECK || l.penalty <= 0 || q > l.capacity || b > l.capacity) {
        return outcome(b, false, false);
      } else {
        // An overflow starts the penalty (none is in force: a held bucket is over-full).
        long held = Ticks.add(l.capacity, l.penalty);
        if (commit(key, cell, e, Ticks.add(now, held))) {
          return outcome(held, false, false);
        }
      }
    }
  }

  /**
   * After a lost CAS, spin a little (exponentially, capped) so that the winner's core keeps the
   * cache line for a few decisions instead of both cores bouncing it on every one.
   */
  private static void backOff(int attempt) {
    for (int i = 1 << Math.min(attempt, 6); i > 0; i--) {
      Thread.onSpinWait();
    }
  }

  /** CAS on the cell, or, for an absent key, insert a cell born with this value. */
  private boolean commit(String key, BucketCell cell, long expected, long value) {
    if (cell != null) {
      return cell.cas(expected, value);
    }
    if (!insert(key, new BucketCell(value))) {
      return false;
    }
    inserted();
    return true;
  }

  // ------------------------------------------------------------------ cells and eviction

  /**
   * Inserts a cell for a decision that writes to an absent key, if the key is still absent,
   * within the key bound (the slot is taken before the cell is visible, so eviction never meets
   * it before its decision).
   */
  private boolean insert(String key, Cell cell) {
    reserveSlot();
    if (cells.putIfAbsent(key, cell) != null) {
      size.decrementAndGet();
      return false;
    }
    return true;
  }

  /** After a new key's decision: sweeps a few idle keys on about every 64th. */
  private void inserted() {
    if ((ThreadLocalRandom.current().nextInt() & 63) == 0) {
      sweep(SAMPLE);
    }
  }

  /** Removes the key's mapping if it is still this cell, and frees its slot. */
  private boolean remove(String key, Cell cell) {
    if (cells.remove(key, cell)) {
      size.decrementAndGet();
      return true;
    }
    return false;
  }

  /** Takes one slot of the key bound, evicting (or waiting for an eviction) when none is free. */
  private void reserveSlot() {
    for (;;) {
      long n = size.get();
      if (n < maximumKeys) {
        if (size.compareAndSet(n, n + 1)) {
          return;
        }
        continue;
      }
      makeRoom();
    }
  }

  /**
   * Frees a batch of slots. Threads that find the bound reached wait here for one another rather
   * than insert past it; the first evicts for all of them.
   */
  private void makeRoom() {
    sweepLock.lock();
    try {
      long target = maximumKeys - evictionBatch;
      if (size.get() < maximumKeys) {
        return;   // another thread made room while this one waited
      }
      long now = clock.nanoTime();
      for (long over = size.get() - target; over > 0; over = size.get() - target) {
        if (!evictSome(now, over)) {
          break;   // every slot is reserved by an insert in progress: let it finish
        }
      }
    } finally {
      sweepLock.unlock();
    }
    if (size.get() >= maximumKeys) {
      Thread.yield();
    }
  }

  /**
   * Frees at least one slot: removes every idle cell among the next {@value #EVICTION_SAMPLE}
   * entries of the cursor, or if none of them is idle, the {@value #BUSY_VICTIMS} of them
   * closest to empty (at most {@code wanted}). False if the map has no entry to take.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private boolean evictSome(long now, long wanted) {
    int victims = (int) Math.max(1, Math.min(BUSY_VICTIMS, wanted));
    Map.Entry<String, Cell>[] best = new Map.Entry[victims];
    long[] bestPressure = new long[victims];
    int found = 0;
    boolean freed = false;
    for (int i = 0; i < EVICTION_SAMPLE; i++) {
      Map.Entry<String, Cell> entry = next();
      if (entry == null) {
        break;
      }
      Cell cell = entry.getValue();
      if (cell.killIfIdle(now)) {
        if (remove(entry.getKey(), cell)) {
          evictedIdle.incrementAndGet();
        }
        freed = true;
      } else if (!freed) {
        // keep the `victims` least-pressed entries, sorted ascending
        long pressure = cell.pressure(now);
        if (found < victims || pressure < bestPressure[found - 1]) {
          int at = found < victims ? found++ : victims - 1;
          while (at > 0 && bestPressure[at - 1] > pressure) {
            best[at] = best[at - 1];
            bestPressure[at] = bestPressure[at - 1];
            at--;
          }
          best[at] = entry;
          bestPressure[at] = pressure;
        }
      }
    }
    if (freed) {
      return true;
    }
    for (int i = 0; i < found; i++) {
      best[i].getValue().kill();
      if (remove(best[i].getKey(), best[i].getValue())) {
        evictedBusy.incrementAndGet();
      }
    }
    return found > 0;
  }

  /** Removes idle cells among the next {@code budget} entries of the sweeping cursor. */
  private void sweep(int budget) {
    if (!sweepLock.tryLock()) {
      return;   // housekeeping only: the bound does not depend on it
    }
    try {
      long now = clock.nanoTime();
      for (int i = 0; i < budget; i++) {
        Map.Entry<String, Cell> entry = next();
        if (entry == null) {
          return;
        }
        if (entry.getValue().killIfIdle(now) && remove(entry.getKey(), entry.getValue())) {
          evictedIdle.incrementAndGet();
        }
      }
    } finally {
      sweepLock.unlock();
    }
  }

  private Map.Entry<String, Cell> next() {
    if (cursor == null || !cursor.hasNext()) {
      cursor = cells.entrySet().iterator();
      if (!cursor.hasNext()) {
        return null;
      }
    }
    return cursor.next();
  }

  /** A key's state. */
  abstract static class Cell {
    /** Marks the cell dead if it holds nothing at {@code now}; returns whether it is dead. */
    abstract boolean killIfIdle(long now);

    /** Marks the cell dead whatever it holds. */
    abstract void kill();

    /** How much the cell still holds, in ticks until it is idle; eviction takes the least. */
    abstract long pressure(long now);
  }

  /** One bucket: the instant it is empty, CASed. */
  static final class BucketCell extends Cell {
    private static final VarHandle E;

    static {
      try {
        E = MethodHandles.lookup().findVarHandle(BucketCell.class, "e", long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    volatile long e;

    BucketCell(long e) {
      this.e = e;
    }

    boolean cas(long expected, long value) {
      return E.compareAndSet(this, expected, value);
    }

    @Override
    boolean killIfIdle(long now) {
      long v = e;
      return v == DEAD || (BucketRules.backlog(v, now) == 0 && cas(v, DEAD));
    }

    @Override
    void kill() {
      E.setVolatile(this, DEAD);
    }

    @Override
    long pressure(long now) {
      long v = e;
      return v == DEAD ? 0 : BucketRules.backlog(v, now);
    }
  }

  /** State slots of several limits or a window, decided under the cell's monitor. */
  static final class SlotsCell extends Cell {
    private final CompiledLimit[] limits;
    private final Clock clock;
    private final long[] state;
    private final long[] next;
    private boolean dead;

    SlotsCell(CompiledLimit[] limits, Clock clock, long[] state) {
      this.limits = limits;
      this.clock = clock;
      this.state = state;
      this.next = new long[state.length];
    }

    /** The decision, or null if the cell is dead and the caller must start over. */
    synchronized Decision decide(int op, double cost) {
      if (dead) {
        return null;
      }
      Decision d = Engine.decide(limits, state, clock.nanoTime(), op, cost, next);
      if (op != Engine.CHECK) {
        System.arraycopy(next, 0, state, 0, state.length);
      }
      return d;
    }

    @Override
    synchronized boolean killIfIdle(long now) {
      if (!dead && Engine.idleAfter(limits, state, now) == 0) {
        dead = true;
      }
      return dead;
    }

    @Override
    synchronized void kill() {
      dead = true;
    }

    @Override
    synchronized long pressure(long now) {
      return dead ? 0 : Engine.idleAfter(limits, state, now);
    }
  }
}

package dev.sluice;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/*
 * The in-memory store.
 *
 * Keys map to cells in a ConcurrentHashMap; there is no global lock on the decision path.
 *
 * One bucket limit (leaky, token, GCRA): the cell is one volatile long, E, the instant the
 * bucket is empty, updated by compare-and-set. A decision reads E, then the clock, computes, and
 * CASes; on failure it retries with a fresh clock reading. A decision that writes nothing reads E
 * again after the clock: E never decreases, so an unchanged E held at the clock reading. Every
 * decision is thus linearizable at its clock reading (checked by Lincheck). No allocation but the Decision, which escape analysis removes when the
 * caller does not keep it.
 *
 * Several limits, or windows: the cell holds the state slots and decides under its own monitor.
 *
 * A key enters the map only when a decision writes to it: checks, rejections and costs that can
 * never fit leave an unknown key unknown, so they allocate nothing.
 *
 * Eviction. A cell leaves the map only after it is marked dead (E = DEAD, or dead = true under
 * the monitor), and only an idle cell is marked dead unless the key bound forces it. A decision
 * that finds a dead cell helps remove it and starts over on a fresh cell, so no charge is ever
 * applied to a cell that has left the map: nothing admitted is lost or counted twice. Idle cells
 * are swept 16 at a time on every 64th new key; when the map holds more than maximumKeys, a new
 * key evicts the idle cells among a sample of 128, or if none is idle the sampled cell closest
 * to empty (its level is forgotten; counted as evictedBusy).
 */
final class InMemoryRateLimiter extends AbstractRateLimiter {
  static final long TICKS_PER_SECOND = 1_000_000_000L;
  private static final long DEAD = Long.MIN_VALUE;
  private static final int SAMPLE = 16;
  private static final int EVICTION_SAMPLE = 128;

  private final CompiledLimit[] compiled;
  /** The single bucket limit of the fast path; null when the general path is used. */
  private final CompiledLimit bucket;
  private final long maximumKeys;
  private final ConcurrentHashMap<String, Cell> cells = new ConcurrentHashMap<>();
  private final AtomicLong inserts = new AtomicLong();
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
        ? compiled[0] : null;
    this.maximumKeys = maximumKeys;
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
    Cell cell = cells.remove(Checks.key(key));
    if (cell != null) {
      cell.kill();
    }
  }

  /** Number of keys held now (idle ones included until swept). */
  long size() {
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
      return decideBucket(key, op, cost);
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
          if (cells.putIfAbsent(key, born) != null) {
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
      cells.remove(key, cell);
    }
  }

  // ------------------------------------------------------------------ one bucket, lock-free

  private Decision decideBucket(String key, int op, double cost) {
    CompiledLimit l = bucket;
    long q = l.quantum(cost);
    for (;;) {
      BucketCell cell = (BucketCell) cells.get(key);
      long e = cell == null ? Ticks.NONE : cell.e;
      if (e == DEAD) {
        cells.remove(key, cell);
        continue;
      }
      long now = clock.nanoTime();
      long b = Engine.backlog(e, now);
      long filled = Ticks.add(b, q);
      if (op == Engine.FILL_UP) {
        boolean reached = filled >= l.capacity;
        long kept = Math.max(b, Math.min(l.capacity, filled));
        if (reached && l.penalty > 0 && q <= l.capacity && b <= l.capacity) {
          kept = Ticks.add(l.capacity, l.penalty);
        }
        if (kept == b ? unchanged(key, cell, e) : commit(key, cell, e, Ticks.add(now, kept))) {
          long retry = q > l.capacity ? Engine.NEVER
              : Ticks.positiveDifference(Ticks.add(kept, q), l.capacity);
          return new Decision(!reached, reached, l.units(Math.max(0, l.capacity - kept)), retry,
              kept, 0, l.limit, null);
        }
      } else if (filled <= l.capacity) {
        if (op == Engine.CHECK) {
          if (unchanged(key, cell, e)) {
            return new Decision(true, false, l.units(l.capacity - b), 0, b, 0, l.limit, null);
          }
        } else if (commit(key, cell, e, Ticks.add(now, filled))) {
          return admitted(l, filled, op == Engine.RESERVE ? b : 0);
        }
      } else if (op == Engine.CHECK || l.penalty <= 0 || q > l.capacity || b > l.capacity) {
        // No write. E never decreases, so if it is unchanged since before the clock was read,
        // it held at that reading: the decision is linearizable there.
        if (unchanged(key, cell, e)) {
          return rejected(l, b, q);
        }
      } else {
        // An overflow starts the penalty (none is in force: a held bucket is over-full).
        long held = Ticks.add(l.capacity, l.penalty);
        if (commit(key, cell, e, Ticks.add(now, held))) {
          return rejected(l, held, q);
        }
      }
    }
  }

  /** CAS on the cell, or, for an absent key, insert a cell born with this value. */
  private boolean commit(String key, BucketCell cell, long expected, long value) {
    return cell != null ? cell.cas(expected, value) : insert(key, new BucketCell(value));
  }

  /** Whether the state read before the clock is still the state (an absent key still absent). */
  private boolean unchanged(String key, BucketCell cell, long expected) {
    return cell != null ? cell.e == expected : !cells.containsKey(key);
  }

  private static Decision admitted(CompiledLimit l, long filled, long delay) {
    return new Decision(true, false, l.units(l.capacity - filled), 0, filled, delay, l.limit, null);
  }

  private static Decision rejected(CompiledLimit l, long backlog, long q) {
    long retry = q > l.capacity ? Engine.NEVER : Ticks.add(backlog, q) - l.capacity;
    return new Decision(false, false, l.units(Math.max(0, l.capacity - backlog)), retry, backlog,
        0, l.limit, null);
  }

  // ------------------------------------------------------------------ cells and eviction

  /**
   * Inserts a cell that a decision has just written, if the key is still absent. A cell is born
   * holding a charge, so the eviction it may trigger never takes it for an idle one.
   */
  private boolean insert(String key, Cell cell) {
    if (cells.putIfAbsent(key, cell) != null) {
      return false;
    }
    inserted();
    return true;
  }

  /** Counts a new key; evicts past the bound, or sweeps a few idle keys on every 64th. */
  private void inserted() {
    long n = inserts.incrementAndGet();
    if (cells.mappingCount() > maximumKeys) {
      evict();
    } else if ((n & 63) == 0) {
      sweep(SAMPLE);
    }
  }

  /** Removes idle cells among the next {@code budget} entries of the sweeping cursor. */
  private void sweep(int budget) {
    if (!sweepLock.tryLock()) {
      return;
    }
    try {
      long now = clock.nanoTime();
      for (int i = 0; i < budget; i++) {
        Map.Entry<String, Cell> entry = next();
        if (entry == null) {
          return;
        }
        if (entry.getValue().killIfIdle(now)) {
          cells.remove(entry.getKey(), entry.getValue());
          evictedIdle.incrementAndGet();
        }
      }
    } finally {
      sweepLock.unlock();
    }
  }

  /**
   * Brings the map back to the bound: removes idle cells among up to {@value #EVICTION_SAMPLE}
   * entries, and only if none of them is idle, the sampled cell nearest to empty. Bounded work per
   * insert, however many keys are busy.
   */
  private void evict() {
    if (!sweepLock.tryLock()) {
      return;
    }
    try {
      long now = clock.nanoTime();
      for (int rounds = 0; cells.mappingCount() > maximumKeys && rounds < 64; rounds++) {
        Map.Entry<String, Cell> best = null;
        long bestPressure = Long.MAX_VALUE;
        for (int i = 0; i < EVICTION_SAMPLE && cells.mappingCount() > maximumKeys; i++) {
          Map.Entry<String, Cell> entry = next();
          if (entry == null) {
            break;
          }
          Cell cell = entry.getValue();
          if (cell.killIfIdle(now)) {
            cells.remove(entry.getKey(), cell);
            evictedIdle.incrementAndGet();
          } else {
            long pressure = cell.pressure(now);
            if (pressure < bestPressure) {
              bestPressure = pressure;
              best = entry;
            }
          }
        }
        if (cells.mappingCount() > maximumKeys) {
          if (best == null) {
            return;
          }
          best.getValue().kill();
          if (cells.remove(best.getKey(), best.getValue())) {
            evictedBusy.incrementAndGet();
          }
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
    /** Marks the cell dead if it holds nothing at {@code now}; returns whether it did. */
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
      return v != DEAD && Engine.backlog(v, now) == 0 && cas(v, DEAD);
    }

    @Override
    void kill() {
      E.setVolatile(this, DEAD);
    }

    @Override
    long pressure(long now) {
      long v = e;
      return v == DEAD ? 0 : Engine.backlog(v, now);
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

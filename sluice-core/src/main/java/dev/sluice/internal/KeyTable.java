package dev.sluice.internal;

import dev.sluice.Clock;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/*
 * The key table of the in-memory limiters, rate and concurrency alike.
 *
 * Eviction. A cell leaves the map only after it is marked dead (E = DEAD, or dead = true under
 * the cell's lock), and only an idle cell is marked dead unless the key bound forces it. A decision
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
 *
 * A cell may refuse to die (Cell.kill returns false): a concurrency key holding permits, whose
 * accounting must not be forgotten. When every cell an eviction step looks at refuses, the slot is
 * not taken: reserve() answers false and the caller refuses the new key (keys full). A table of
 * rate cells, which always die, never refuses.
 */
public final class KeyTable {
  private static final int SAMPLE = 16;
  /**
   * Entries one eviction step looks at; busy keys go only if none of them is idle. Large because
   * keys with similar names (user:1, user:2, ...) sit side by side in the map's order.
   */
  private static final int EVICTION_SAMPLE = 256;
  /** Busy keys one step may evict, the ones closest to empty among its sample. */
  private static final int BUSY_VICTIMS = 32;
  /** Eviction steps whose cells all refuse to die before a new key is refused. */
  private static final int REFUSED_STEPS = 4;
  /** Largest batch of slots one eviction pass frees. */
  private static final long MAX_EVICTION_BATCH = 1024;

  private final Clock clock;
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

  public KeyTable(Clock clock, long maximumKeys) {
    this.clock = clock;
    this.maximumKeys = maximumKeys;
    this.evictionBatch = Math.max(1, Math.min(MAX_EVICTION_BATCH, maximumKeys / 100));
  }

  /** The key's cell, or null. */
  public Cell get(String key) {
    return cells.get(key);
  }

  public boolean containsKey(String key) {
    return cells.containsKey(key);
  }

  /**
   * Number of keys held now (idle ones included until swept), counting slots reserved by inserts
   * in progress: an upper bound on the map's size at every instant, exact when no insert runs.
   */
  public long size() {
    return size.get();
  }

  /** The map's own count (for tests: equals {@link #size()} when no insert is in progress). */
  public long mappedKeys() {
    return cells.mappingCount();
  }

  public long evictedIdle() {
    return evictedIdle.get();
  }

  public long evictedBusy() {
    return evictedBusy.get();
  }

  /**
   * Inserts a cell for a decision that writes to an absent key, if the key is still absent,
   * within the key bound (the slot is taken before the cell is visible, so eviction never meets
   * it before its decision). False if the key is mapped already, or if no slot could be freed
   * (only when cells refuse to die).
   */
  public boolean insert(String key, Cell cell) {
    return reserve() && put(key, cell);
  }

  /**
   * Takes one slot of the key bound, evicting when none is free; false if every cell looked at
   * refuses to die. The slot is the caller's: {@link #put} fills it, {@link #unreserve} gives it
   * back.
   */
  public boolean reserve() {
    for (;;) {
      long n = size.get();
      if (n < maximumKeys) {
        if (size.compareAndSet(n, n + 1)) {
          return true;
        }
        continue;
      }
      if (!makeRoom()) {
        return false;
      }
    }
  }

  /** Gives back a slot {@link #reserve} took and nothing filled. */
  public void unreserve() {
    size.decrementAndGet();
  }

  /**
   * Maps the key to {@code cell} in a slot {@link #reserve} took; if the key is mapped already,
   * gives the slot back and answers false.
   */
  public boolean put(String key, Cell cell) {
    if (cells.putIfAbsent(key, cell) != null) {
      size.decrementAndGet();
      return false;
    }
    return true;
  }

  /** After a new key's decision: sweeps a few idle keys on about every 64th. */
  public void inserted() {
    if ((ThreadLocalRandom.current().nextInt() & 63) == 0) {
      sweep(SAMPLE);
    }
  }

  /** Removes the key's mapping if it is still this cell, and frees its slot. */
  public boolean remove(String key, Cell cell) {
    if (cells.remove(key, cell)) {
      size.decrementAndGet();
      return true;
    }
    return false;
  }

  /** Forgets the key (a reset): its cell dies and leaves, unless it refuses to die. */
  public void forget(String key) {
    Cell cell = cells.get(key);
    if (cell != null && cell.kill()) {
      remove(key, cell);
    }
  }

  /** Maps the key to {@code next} if it is still mapped to {@code cell} (same slot). */
  public boolean replace(String key, Cell cell, Cell next) {
    return cells.replace(key, cell, next);
  }

  /**
   * Frees a batch of slots. Threads that find the bound reached wait here for one another rather
   * than insert past it; the first evicts for all of them. False if every cell looked at refused
   * to die (no slot was freed, and none will be by waiting).
   */
  // ThreadPriorityCheck: a spin while another thread finishes a short insert; correctness does not depend on it
  @SuppressWarnings("ThreadPriorityCheck")
  private boolean makeRoom() {
    sweepLock.lock();
    try {
      long target = maximumKeys - evictionBatch;
      if (size.get() < maximumKeys) {
        return true;   // another thread made room while this one waited
      }
      long now = clock.nanoTime();
      int refusals = 0;
      for (long over = size.get() - target; over > 0; over = size.get() - target) {
        Freed freed = evictSome(now, over);
        if (freed == Freed.REFUSED && ++refusals == REFUSED_STEPS) {
          return size.get() < maximumKeys;
        }
        if (freed == Freed.NOTHING) {
          break;   // every slot is reserved by an insert in progress: let it finish
        }
      }
    } finally {
      sweepLock.unlock();
    }
    if (size.get() >= maximumKeys) {
      Thread.yield();
    }
    return true;
  }

  /** What one eviction step did. */
  private enum Freed { SOME, NOTHING, REFUSED }

  /**
   * Frees at least one slot: removes every idle cell among the next {@value #EVICTION_SAMPLE}
   * entries of the cursor, or if none of them is idle, the {@value #BUSY_VICTIMS} of them
   * closest to empty (at most {@code wanted}). NOTHING if the map has no entry to take; REFUSED if
   * it has, and each one taken refused to die.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private Freed evictSome(long now, long wanted) {
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
      return Freed.SOME;
    }
    boolean killed = false;
    for (int i = 0; i < found; i++) {
      if (best[i].getValue().kill()) {
        killed = true;
        if (remove(best[i].getKey(), best[i].getValue())) {
          evictedBusy.incrementAndGet();
        }
      }
    }
    return killed ? Freed.SOME : found > 0 ? Freed.REFUSED : Freed.NOTHING;
  }

  /** Removes every idle cell (looking at each once), for a limiter's periodic sweep. */
  public void sweepAll() {
    long now = clock.nanoTime();
    for (Map.Entry<String, Cell> entry : cells.entrySet()) {
      if (entry.getValue().killIfIdle(now) && remove(entry.getKey(), entry.getValue())) {
        evictedIdle.incrementAndGet();
      }
    }
  }

  /** The cells, for a limiter that visits every key (closing, say). */
  public Iterable<Cell> cells() {
    return cells.values();
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
  public abstract static class Cell {
    /** Marks the cell dead if it holds nothing at {@code now}; returns whether it is dead. */
    protected abstract boolean killIfIdle(long now);

    /**
     * Marks the cell dead to make room, unless it holds what must not be forgotten (a
     * concurrency key's permits); returns whether it is dead.
     */
    protected abstract boolean kill();

    /** How much the cell still holds, in ticks until it is idle; eviction takes the least. */
    protected abstract long pressure(long now);
  }
}

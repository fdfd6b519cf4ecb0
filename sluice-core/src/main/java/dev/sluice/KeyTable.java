package dev.sluice;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/*
 * The key table of the in-memory store.
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
 */
final class KeyTable {
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

  KeyTable(Clock clock, long maximumKeys) {
    this.clock = clock;
    this.maximumKeys = maximumKeys;
    this.evictionBatch = Math.max(1, Math.min(MAX_EVICTION_BATCH, maximumKeys / 100));
  }

  /** The key's cell, or null. */
  Cell get(String key) {
    return cells.get(key);
  }

  boolean containsKey(String key) {
    return cells.containsKey(key);
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

  /**
   * Inserts a cell for a decision that writes to an absent key, if the key is still absent,
   * within the key bound (the slot is taken before the cell is visible, so eviction never meets
   * it before its decision).
   */
  boolean insert(String key, Cell cell) {
    reserveSlot();
    if (cells.putIfAbsent(key, cell) != null) {
      size.decrementAndGet();
      return false;
    }
    return true;
  }

  /** After a new key's decision: sweeps a few idle keys on about every 64th. */
  void inserted() {
    if ((ThreadLocalRandom.current().nextInt() & 63) == 0) {
      sweep(SAMPLE);
    }
  }

  /** Removes the key's mapping if it is still this cell, and frees its slot. */
  boolean remove(String key, Cell cell) {
    if (cells.remove(key, cell)) {
      size.decrementAndGet();
      return true;
    }
    return false;
  }

  /** Maps the key to {@code next} if it is still mapped to {@code cell} (same slot). */
  boolean replace(String key, Cell cell, Cell next) {
    return cells.replace(key, cell, next);
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
  // ThreadPriorityCheck: a spin while another thread finishes a short insert; correctness does not depend on it
  @SuppressWarnings("ThreadPriorityCheck")
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
}

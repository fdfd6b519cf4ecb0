package dev.sluice.concurrency;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ThreadLocalRandom;

/*
 * A key's lock-free lane for permits of weight 1 at normal priority (the in-memory limiter's
 * hot path): handles, and permit objects whose id is the lane's handle.
 *
 * The lane is a few slots, each a word on its own cache line: a generation and a state, FREE,
 * HELD or CLOSED. A handle permit is taken by one compare-and-set of a FREE slot to HELD in the
 * next generation, and given back by one compare-and-set from HELD to FREE in that generation:
 * no monitor, no clock, nothing allocated; the handle is the lane bit, the generation and the
 * slot, so a second release, or one after the lease ended, finds another word and changes nothing.
 *
 * The lane's capacity is lent by its key. Every slot that is not CLOSED (FREE or HELD) counts in
 * the key's weight in flight, under the key's monitor: opening a slot (CLOSED to FREE) adds one,
 * closing a FREE one (reclaim) takes one off, and only the monitor does either. So the key's limit
 * holds at every instant whatever the threads, as it does for the key's other permits. A FREE
 * slot is capacity held in reserve for the lane: the monitor reclaims it whenever another
 * acquisition (a heavier permit, a waiter, another priority) needs it, and opens slots again on
 * the lane's path when there is room and nobody waits.
 *
 * Waiters. While the key has waiters the monitor sets `contended`, then reclaims the FREE slots.
 * A release writes its slot FREE (a compare-and-set: a full fence) and then reads `contended`:
 * when set, it takes the monitor, which reclaims the slot for the waiters. Either the monitor's
 * reclaim sees the slot FREE, or the release sees `contended`: no released permit is left idle
 * while a waiter waits (the two sides are Dekker's, each a write then a read across a fence).
 *
 * Leases end as the key's other permits' do, a lease after the acquisition: a slot taken keeps
 * the time (one clock reading, the hot path's only one) and then its generation as stamped
 * (a release-ordered write), and the monitor, whenever it looks at the key (its next acquisition
 * that is not the lane's, its sweep every half lease), gives back the slots held past their
 * lease (EXPIRED). It trusts a time only under the generation it was stamped for: a slot taken
 * but not yet stamped is young. A renewal stamps the time again, under the monitor (which alone
 * expires), so a lease cannot end between the renewal's check and its stamp.
 */
final class Lane {
  /** Marks a handle as the lane's (the key's other handles never have it). */
  static final long LANE_BIT = 1L << 62;
  private static final int SLOT_BITS = 20;
  private static final long SLOT_MASK = (1L << SLOT_BITS) - 1;
  private static final long GENERATION_MASK = (1L << 40) - 1;
  private static final long FREE = 0;
  private static final long HELD = 1;
  private static final long CLOSED = 2;
  private static final long STATE = 3;
  /** Longs between two slots' words: 64 bytes, a cache line (word, stamped generation, time). */
  private static final int STRIDE = 8;
  private static final int STAMP_GENERATION = 1;
  private static final int STAMP_TIME = 2;
  private static final VarHandle WORDS = MethodHandles.arrayElementVarHandle(long[].class);

  private final int size;
  /** The slots' words at 0, STRIDE, 2 STRIDE, ...: generation << 2 | state. All CLOSED at first. */
  private final long[] words;
  /** Set by the monitor while the key has waiters: a release then takes the monitor. */
  volatile boolean contended;

  /**
   * A lane of {@code size} slots, all CLOSED. Generations start at random, so that a handle kept
   * from an earlier lane of the same key (one that expired, and whose key was forgotten and made
   * again) names a live slot of this one with a chance of 2^-40, not whenever their counts meet.
   */
  Lane(int size) {
    this.size = size;
    this.words = new long[size * STRIDE];
    long start = ThreadLocalRandom.current().nextLong() & GENERATION_MASK;
    for (int i = 0; i < size; i++) {
      words[i * STRIDE] = (start << 2) | CLOSED;
      words[i * STRIDE + STAMP_GENERATION] = -1;
    }
  }

  /**
   * The lane's slots for a key whose normal priority may hold {@code ceiling}: up to 16, so that
   * threads starting from slots of their own rarely meet on one (a kilobyte a key that uses
   * handles).
   */
  static int sizeFor(int ceiling) {
    return Math.max(1, Math.min(ceiling, 16));
  }

  private long word(int slot) {
    return (long) WORDS.getVolatile(words, slot * STRIDE);
  }

  private boolean cas(int slot, long expected, long next) {
    return WORDS.compareAndSet(words, slot * STRIDE, expected, next);
  }

  /** Whether {@code handle} is one of a lane's. */
  static boolean isLane(long handle) {
    return handle >= 0 && (handle & LANE_BIT) != 0;
  }

  /** A handle if a FREE slot was taken at {@code now}, else -1; lock-free. */
  long tryAcquire(long now) {
    int n = size;
    long mixed = (Thread.currentThread().getId() * 0x9E3779B97F4A7C15L) >>> 32;
    int idx = (int) ((mixed * n) >>> 32);
    for (int i = 0; i < n; i++) {
      long w = word(idx);
      if ((w & STATE) == FREE) {
        long g = ((w >>> 2) + 1) & GENERATION_MASK;
        if (cas(idx, w, (g << 2) | HELD)) {
          int at = idx * STRIDE;
          words[at + STAMP_TIME] = now;
          WORDS.setRelease(words, at + STAMP_GENERATION, g);
          return LANE_BIT | (g << SLOT_BITS) | idx;
        }
      }
      if (++idx == n) {
        idx = 0;
      }
    }
    return -1;
  }

  /** Gives the handle's slot back; true for the call that did (exactly once), false otherwise. */
  boolean release(long handle) {
    long idx = handle & SLOT_MASK;
    if (!isLane(handle) || idx >= size) {
      return false;
    }
    long g = (handle >>> SLOT_BITS) & GENERATION_MASK;
    return cas((int) idx, (g << 2) | HELD, (g << 2) | FREE);
  }

  /** Whether the handle's slot is still held by it (not released, not expired). */
  boolean isHeld(long handle) {
    long idx = handle & SLOT_MASK;
    if (!isLane(handle) || idx >= size) {
      return false;
    }
    long g = (handle >>> SLOT_BITS) & GENERATION_MASK;
    return word((int) idx) == ((g << 2) | HELD);
  }

  /**
   * Under the monitor (which alone expires slots): starts the handle's lease again at
   * {@code now}; false if its slot is no longer held by it.
   */
  boolean renew(long handle, long now) {
    if (!isHeld(handle)) {
      return false;
    }
    words[(int) (handle & SLOT_MASK) * STRIDE + STAMP_TIME] = now;
    return true;
  }

  /** Under the monitor: closes every FREE slot; how many it closed (capacity handed back). */
  int reclaim() {
    int closed = 0;
    for (int i = 0; i < size; i++) {
      long w = word(i);
      if ((w & STATE) == FREE && cas(i, w, (w & ~STATE) | CLOSED)) {
        closed++;
      }
    }
    return closed;
  }

  /** Under the monitor: opens up to {@code most} CLOSED slots; how many it opened. */
  int open(int most) {
    int opened = 0;
    for (int i = 0; i < size && opened < most; i++) {
      long w = word(i);
      if ((w & STATE) == CLOSED && cas(i, w, (w & ~STATE) | FREE)) {
        opened++;
      }
    }
    return opened;
  }

  /** The slots HELD now (a permit each). */
  int held() {
    int n = 0;
    for (int i = 0; i < size; i++) {
      if ((word(i) & STATE) == HELD) {
        n++;
      }
    }
    return n;
  }

  /** The slots FREE now (reserved for the lane, held by nobody). */
  int free() {
    int n = 0;
    for (int i = 0; i < size; i++) {
      if ((word(i) & STATE) == FREE) {
        n++;
      }
    }
    return n;
  }

  /** Under the monitor: gives back the slots held past {@code leaseNanos}; how many came back. */
  int expire(long now, long leaseNanos) {
    int expired = 0;
    for (int i = 0; i < size; i++) {
      long w = word(i);
      if ((w & STATE) != HELD) {
        continue;
      }
      int at = i * STRIDE;
      if ((long) WORDS.getAcquire(words, at + STAMP_GENERATION) != (w >>> 2)) {
        continue;   // taken, not yet stamped: young
      }
      if (now - words[at + STAMP_TIME] >= leaseNanos && cas(i, w, (w & ~STATE) | FREE)) {
        expired++;
      }
    }
    return expired;
  }
}

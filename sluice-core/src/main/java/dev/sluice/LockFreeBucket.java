package dev.sluice;

import dev.sluice.internal.KeyTable;

import dev.sluice.spi.StoreProtocol;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/*
 * The in-memory store's lock-free path: one bucket limit (leaky, token, GCRA), whatever its rate.
 *
 * The key's cell is one volatile long updated by compare-and-set: the instant the bucket is
 * empty, counted in the limit's steps (1/scale of a nanosecond, CompiledLimit) from the cell's
 * origin, a clock reading fixed when the cell was made. Steps make every rate exact in one word:
 * at 3/s a unit is 1e9 steps of 1/3 ns, where the engine's state needs two longs [E, R]
 * (E = ceil(steps / scale) + origin, R = E * scale - steps: BucketCell.state converts). The
 * backlog at now is e - (now - origin) * scale. That product stays below 2^62 for 2^62 / scale
 * nanoseconds of the cell's age (146 years at scale 1, 77 minutes at scale 10^6); an older cell
 * is rebased: moved to a new cell whose origin is now, its backlog carried over, the old one
 * marked MOVED so that racing decisions look the key up again, or, when empty, simply dropped.
 *
 * A decision reads the clock, then the cell, computes and CASes at once; it takes effect at the
 * CAS (or at the read of the cell if it writes nothing) as of the clock reading just before.
 * Racing decisions may commit out of the order of their readings by those nanoseconds;
 * accounting stays exact because a non-empty bucket's update, e + q, does not depend on the
 * time. Lincheck checks the operations racing at one instant. No allocation but the Decision,
 * which escape analysis removes when the caller does not keep it: the path returns one long and a
 * single small method builds the Decision.
 *
 * Why a second copy of the bucket's state (one word, in steps from an origin) beside BucketRules':
 * it pays for itself. PathsBenchmark (sluice-benchmarks), one hot key that always admits, this
 * path against the general one (BucketRules under the cell's lock) in the same run, 2026-11-25:
 * 29.36 against 20.53 decisions/us at 10^9/s (1.43x), 27.34 against 19.10 at 3/s (1.43x), and
 * 0 B/op against 88-96 (docs/benchmarks.md). The admit rule itself is not copied:
 * BucketRules.admits decides here too.
 */
final class LockFreeBucket {
  private final CompiledLimit bucket;
  private final Clock clock;
  private final KeyTable table;
  /** The age (ns) past which a cell is rebased: (now - origin) * scale stays below 2^62. */
  private final long rebaseAge;

  /** Cells are rebased after {@code rebaseAge} ns at the latest (tests pass less). */
  LockFreeBucket(CompiledLimit bucket, Clock clock, KeyTable table, long rebaseAge) {
    this.bucket = bucket;
    this.clock = clock;
    this.table = table;
    this.rebaseAge = Math.min(rebaseAge, (1L << 62) / bucket.scale);
  }

  /** The decision of {@code op} for a cost already validated. */
  Decision decide(String key, int op, double cost) {
    long q = bucket.quantum(cost);
    return bucketDecision(bucket, op, q, decideBucket(key, op, q, null));
  }

  /** A key limiter of {@code limiter} (whose path this is) bound to {@code key}, checked here. */
  KeyLimiter bind(RateLimiter limiter, String key) {
    return new Bound(limiter, key);
  }

  /**
   * A key limiter that keeps the key's cell at hand and looks the key up only when the cell it
   * holds is no longer live (reset, evicted, idle-swept or rebased: a live cell is always the
   * one the table maps the key to, KeyTable). The cell is held in a plain field, shared by the
   * threads that use this limiter: a thread may read an older cell than another wrote, which
   * costs a lookup and nothing else, since no decision charges a cell that is not live (the CAS
   * expects a live value); a cell's origin and limit are final, so any thread that reads the
   * reference sees them.
   */
  private final class Bound extends ForwardingKeyLimiter {
    /** The key's cell as last seen by a decision through this limiter; null if absent then. */
    BucketCell cell;

    Bound(RateLimiter limiter, String key) {
      super(limiter, key);
    }

    @Override
    public Decision tryAcquire() {
      return decideBound(Engine.TRY_ACQUIRE, 1);
    }

    @Override
    public Decision tryAcquire(double cost) {
      return decideBound(Engine.TRY_ACQUIRE, cost);
    }

    @Override
    public Decision check(double cost) {
      return decideBound(Engine.CHECK, cost);
    }

    @Override
    public Decision reserve(double cost) {
      return decideBound(Engine.RESERVE, cost);
    }

    private Decision decideBound(int op, double cost) {
      if (cost != 1) {
        Checks.cost(cost);
      }
      long q = bucket.quantum(cost);
      return bucketDecision(bucket, op, q, decideBucket(key(), op, q, this));
    }
  }

  /** The key's cell from the table, remembered by {@code bound} if there is one. */
  private BucketCell lookUp(String key, Bound bound) {
    BucketCell cell = (BucketCell) table.get(key);
    if (bound != null) {
      bound.cell = cell;
    }
    return cell;
  }

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
        : q > l.capacity ? Engine.NEVER
        : BucketRules.ticksUp(l, Ticks.positiveDifference(Ticks.add(after, q), l.capacity));
    long delay = op == Engine.RESERVE && allowed ? BucketRules.ticksUp(l, after - q) : 0;
    return new Decision(allowed, reached, l.units(Math.max(0, l.capacity - after)), retry,
        BucketRules.ticksUp(l, after), delay, l.limit, null);
  }

  /**
   * One bucket, lock-free. Reads the clock, then the cell, then computes and CASes at once (a
   * short window, so that contended CASes rarely fail). The decision takes effect at the CAS, or
   * at the read of the cell when it writes nothing, as of the clock reading just before; a cell
   * read after that reading holds every commit made before it. For a single bucket the queue
   * ({@code reserve}) admits exactly as the meter does; only its delay differs.
   */
  private long decideBucket(String key, int op, long q, Bound bound) {
    CompiledLimit l = bucket;
    long now = clock.nanoTime();
    BucketCell remembered = bound == null ? null : bound.cell;   // one read of the shared field
    BucketCell cell = remembered != null ? remembered : lookUp(key, bound);
    boolean lost = false;   // the last CAS (or insert) failed
    for (;;) {
      if (lost) {
        backOff();
        lost = false;
        if (cell == null) {
          cell = lookUp(key, bound);
        }
      }
      long e;
      long at;   // now in steps from the cell's origin
      if (cell == null) {
        e = 0;
        at = 0;
      } else {
        e = cell.e;
        long age = now - cell.origin;
        if (e < LIVE || age > rebaseAge) {
          if (e == DEAD) {
            table.remove(key, cell);
          } else if (e == MOVED) {
            Thread.onSpinWait();   // its successor is about to be mapped
          } else {
            rebase(key, cell, e, now);
          }
          cell = lookUp(key, bound);   // nothing was lost: look again at once
          continue;
        }
        at = age * l.scale;
      }
      long b = Math.min(l.big, Ticks.positiveDifference(e, at));
      long filled = Ticks.add(b, q);
      if (op == Engine.FILL_UP) {
        boolean reached = filled >= l.capacity;
        long kept = Math.max(b, Math.min(l.capacity, filled));
        if (reached && l.penalty > 0 && q <= l.capacity && b <= l.capacity) {
          kept = Ticks.add(l.capacity, l.penalty);
        }
        if (kept == b || commit(key, cell, e, at, kept, now, bound)) {
          return outcome(kept, !reached, reached);
        }
      } else if (BucketRules.admits(b, q, l.capacity)) {
        if (op == Engine.CHECK) {
          return outcome(b, true, false);
        }
        if (commit(key, cell, e, at, filled, now, bound)) {
          return outcome(filled, true, false);
        }
      } else if (op == Engine.CHECK || l.penalty <= 0 || q > l.capacity || b > l.capacity) {
        return outcome(b, false, false);
      } else {
        // An overflow starts the penalty (none is in force: a held bucket is over-full).
        long held = Ticks.add(l.capacity, l.penalty);
        if (commit(key, cell, e, at, held, now, bound)) {
          return outcome(held, false, false);
        }
      }
      lost = true;
    }
  }

  /**
   * Moves an old cell's backlog to a new cell whose origin is {@code now} (or drops the cell if
   * it is empty: an absent key is an empty bucket). The old cell is marked MOVED first, so no
   * decision charges it afterwards; a decision that meets the mark looks the key up again. If the
   * old cell left the map meanwhile (evicted, reset) its backlog goes with it, as eviction and
   * reset intend.
   */
  private void rebase(String key, BucketCell cell, long e, long now) {
    long b = cell.backlog(e, now);
    if (b == 0) {
      if (cell.cas(e, DEAD)) {
        table.remove(key, cell);
      }
    } else if (cell.cas(e, MOVED)) {
      table.replace(key, cell, new BucketCell(now, b, bucket));
    }
  }

  /**
   * After a lost CAS, park for the shortest time the OS allows (about 50 µs on Linux), as
   * Resilience4j's limiter does, so that the winner's core keeps the cache line for many
   * decisions instead of both cores bouncing it on every one: on a hot key shared by two threads
   * this about doubles throughput (docs/benchmarks.md), at the price of that pause for the thread
   * that lost. Spinning instead (up to 64 pauses) left two threads at about half the throughput
   * of one.
   */
  private static void backOff() {
    LockSupport.parkNanos(1);
  }

  /**
   * Writes a backlog of {@code kept} steps at the cell's time {@code at}: a CAS on the cell, or,
   * for an absent key, the insert of a cell born at {@code now} holding it (which {@code bound},
   * if any, then holds).
   */
  private boolean commit(String key, BucketCell cell, long expected, long at, long kept,
      long now, Bound bound) {
    if (cell != null) {
      return cell.cas(expected, at + kept);
    }
    BucketCell born = new BucketCell(now, kept, bucket);
    if (!table.insert(key, born)) {
      return false;
    }
    if (bound != null) {
      bound.cell = born;
    }
    table.inserted();
    return true;
  }

  /** Reset: kills the key's cell, and its successor if a rebase was moving it. */
  void reset(String key) {
    for (BucketCell cell = (BucketCell) table.get(key); cell != null;
        cell = (BucketCell) table.get(key)) {
      long was = cell.killAndGet();
      table.remove(key, cell);
      if (was != MOVED) {
        return;
      }
    }
  }

  /** The key's state as the engine keeps it, [E] or [E, R] (for tests); null if absent. */
  long[] state(String key) {
    BucketCell cell = (BucketCell) table.get(key);
    long e = cell == null ? DEAD : cell.e;
    return e < LIVE ? null : cell.state(e);
  }

  /** Puts the key's state as the engine keeps it, [E] or [E, R], at {@code now} (for tests). */
  void put(String key, long[] state, long now) {
    reset(key);
    long e = state[StoreProtocol.BUCKET_EMPTY_AT];
    if (e == Ticks.NONE) {
      return;
    }
    long r = bucket.scale == 1 ? 0 : Math.min(state[StoreProtocol.BUCKET_REMAINDER], bucket.scale - 1);
    // steps from an origin at now: (E - now) * scale - R, negative for an empty bucket
    long bound = (1L << 62) / bucket.scale;
    long steps = Math.max(-bound, Math.min(bound, e - now)) * bucket.scale - r;
    if (!table.insert(key, new BucketCell(now, steps, bucket))) {
      throw new IllegalStateException("key " + key + " appeared while being put");
    }
  }

  /** Values of a cell below this are marks, not backlogs. */
  private static final long LIVE = Long.MIN_VALUE + 2;
  /** The cell is dead: idle when killed, or evicted; its key is absent. */
  static final long DEAD = Long.MIN_VALUE;
  /** The cell's backlog moved to a new cell (a rebase): look the key up again. */
  static final long MOVED = Long.MIN_VALUE + 1;

  /** One bucket: the instant it is empty, in steps from its origin, CASed. */
  static final class BucketCell extends KeyTable.Cell {
    private static final VarHandle E;

    static {
      try {
        E = MethodHandles.lookup().findVarHandle(BucketCell.class, "e", long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    /** The clock reading the cell counts from. */
    final long origin;
    /** The limit (its scale): a shared reference, 4 bytes a cell with compressed pointers. */
    private final CompiledLimit limit;
    volatile long e;

    BucketCell(long origin, long e, CompiledLimit limit) {
      this.origin = origin;
      this.e = e;
      this.limit = limit;
    }

    boolean cas(long expected, long value) {
      return E.compareAndSet(this, expected, value);
    }

    long killAndGet() {
      return (long) E.getAndSet(this, DEAD);
    }

    /** Steps of backlog at {@code now}, for a live value {@code v}. */
    private long backlog(long v, long now) {
      long scale = limit.scale;
      long age = now - origin;
      long at = age > Long.MAX_VALUE / scale ? Long.MAX_VALUE : age * scale;
      return Ticks.positiveDifference(v, at);
    }

    /** The engine's [E] or [E, R] for a live value. */
    long[] state(long v) {
      long scale = limit.scale;
      long ticks = Math.floorDiv(v + scale - 1, scale);   // ceil(v / scale)
      long emptyAt = origin + ticks;
      return scale == 1 ? new long[] {emptyAt} : new long[] {emptyAt, ticks * scale - v};
    }

    @Override
    protected boolean killIfIdle(long now) {
      long v = e;
      if (v == DEAD) {
        return true;
      }
      return v != MOVED && backlog(v, now) == 0 && cas(v, DEAD);
    }

    @Override
    protected boolean kill() {
      E.setVolatile(this, DEAD);
      return true;
    }

    @Override
    protected long pressure(long now) {
      long v = e;
      return v < LIVE ? 0 : (backlog(v, now) + limit.scale - 1) / limit.scale;
    }
  }
}

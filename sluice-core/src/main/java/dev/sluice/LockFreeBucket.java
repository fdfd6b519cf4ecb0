package dev.sluice;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/*
 * The in-memory store's lock-free path: one bucket limit (leaky, token, GCRA) whose unit of cost
 * is a whole number of nanoseconds (scale 1: 1,000/s, 10^9/s, 7/min, but not 1.5/s or 7/s).
 *
 * The key's cell is one volatile long, E, the instant the bucket is empty, updated by
 * compare-and-set. A decision reads the clock, then E, computes and CASes at once; it takes
 * effect at the CAS (or at the read of E if it writes nothing) as of the clock reading just
 * before. Racing decisions may commit out of the order of their readings by those nanoseconds;
 * accounting stays exact because a non-empty bucket's update, E + q, does not depend on the time.
 * Lincheck checks the operations racing at one instant. No allocation but the Decision, which
 * escape analysis removes when the caller does not keep it: the path returns one long and a
 * single small method builds the Decision.
 */
final class LockFreeBucket {
  static final long DEAD = Long.MIN_VALUE;

  private final CompiledLimit bucket;
  private final Clock clock;
  private final KeyTable table;

  LockFreeBucket(CompiledLimit bucket, Clock clock, KeyTable table) {
    this.bucket = bucket;
    this.clock = clock;
    this.table = table;
  }

  /** The decision of {@code op} for a cost already validated. */
  Decision decide(String key, int op, double cost) {
    long q = bucket.quantum(cost);
    return bucketDecision(bucket, op, q, decideBucket(key, op, q));
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
    BucketCell cell = (BucketCell) table.get(key);
    for (int attempt = 0; ; attempt++) {
      if (attempt > 0) {
        backOff(attempt);
        if (cell == null) {
          cell = (BucketCell) table.get(key);
        }
      }
      long e = cell == null ? Ticks.NONE : cell.e;
      if (e == DEAD) {
        table.remove(key, cell);
        cell = (BucketCell) table.get(key);
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
    if (!table.insert(key, new BucketCell(value))) {
      return false;
    }
    table.inserted();
    return true;
  }

  /** One bucket: the instant it is empty, CASed. */
  static final class BucketCell extends KeyTable.Cell {
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
}

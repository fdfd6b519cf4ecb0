package dev.sluice.concurrency;

import dev.sluice.Clock;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;

/**
 * One limit of permits in flight, in memory and lock-free: the bare bulkhead, for a hot path that
 * guards one resource (a connection pool, a downstream service) and needs neither keys, waiting,
 * priorities nor a shared store ({@link ConcurrencyLimiter} has all of those).
 *
 * <pre>{@code
 * Bulkhead db = Bulkhead.builder(64).lease(Duration.ofSeconds(30)).build();
 * long permit = db.tryAcquire();
 * if (permit == Bulkhead.NO_PERMIT) {
 *   return overloaded();
 * }
 * try {
 *   return query();
 * } finally {
 *   db.release(permit);
 * }
 * }</pre>
 *
 * <p><b>How.</b> The permits are {@code limit} slots, each on its own cache line, holding two
 * generations: the last acquired and the last released; a slot is free when they are equal. An
 * acquisition takes a free slot by one compare-and-set on its acquired generation, starting from
 * a slot chosen by its thread (so that threads rarely meet on one line); a release gives it back
 * by one plain (release-ordered) write of its generation as the released one, no
 * compare-and-set: only the permit's holder, or the lease's end, ever writes that generation
 * there, and both write the same value. A permit is a number (the slot and its generation), so
 * nothing is allocated, and its slot comes back exactly once: a second release, or one after its
 * lease ended and the slot was taken again, finds another generation and changes nothing. There
 * are exactly {@code limit} slots, so more than {@code limit} permits are never held at once.
 *
 * <p>What the plain write costs: two threads releasing one handle at the same instant may both be
 * answered true (its slot still comes back once), and a holder that releases at the very
 * instant its lease ends can be answered true while the permit also counts as {@link #expired()}.
 * A release delayed in its thread across its lease's end and the slot's next acquisition and
 * release can write an older generation back; the slot then looks held until a lease later,
 * which costs a permit for a while and never admits one too many.
 *
 * <p><b>Leases without a clock on the hot path.</b> Acquiring and releasing read no clock. When an
 * acquisition finds every slot held, it reads the clock and, at most once an eighth of a lease,
 * looks at the held slots: a slot seen held in the same generation for a whole lease comes back
 * (ended as expired). So a permit whose holder died or forgot it is held at most a lease and an
 * eighth past the first time the bulkhead was found full with it: a lost release costs at most
 * that much of refusals, and nothing while the bulkhead has room.
 *
 * <p><b>Counts</b> come from the generations, not from counters on the hot path:
 * {@link #acquired()} and {@link #inFlight()} read every slot. Generations count modulo 2^43: a
 * handle kept through 2^43 uses of its slot (a day at 100 million a second) could release
 * another's permit.
 *
 * <p>Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#bulkhead-one-limit-lock-free">docs/concurrency.md, "Bulkhead: one limit, lock-free"</a>.
 */
public final class Bulkhead {
  /** What {@link #tryAcquire} answers when every permit is held. */
  public static final long NO_PERMIT = -1;
  /** The most permits a bulkhead holds: a slot's index fits in 20 bits of a handle. */
  public static final int MAX_LIMIT = 1 << 20;

  private static final int SLOT_BITS = 20;
  private static final long SLOT_MASK = (1L << SLOT_BITS) - 1;
  private static final long GENERATION_MASK = (1L << (63 - SLOT_BITS)) - 1;
  private static final VarHandle ACQUIRED;
  private static final VarHandle RELEASED;

  static {
    try {
      ACQUIRED = MethodHandles.lookup().findVarHandle(Slot.class, "acquired", long.class);
      RELEASED = MethodHandles.lookup().findVarHandle(Slot.class, "released", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Padding before a slot's word, so that two slots never share a cache line. */
  @SuppressWarnings("unused")
  private static class SlotPadBefore {
    long p1, p2, p3, p4, p5, p6, p7;
  }

  /**
   * A slot's generations (modulo 2^43): the last acquired, and the last released; held while they
   * differ. Only compare-and-set moves the first; the second is written by the holder of the
   * generation it names, or by the lease's end.
   */
  private static class SlotWord extends SlotPadBefore {
    volatile long acquired;
    volatile long released;
  }

  /** A slot, padded after its word too. */
  @SuppressWarnings("unused")
  private static final class Slot extends SlotWord {
    long q1, q2, q3, q4, q5, q6, q7;
  }

  private final int limit;
  private final long leaseNanos;
  private final Clock clock;
  private final Slot[] slots;
  /** Under this object's monitor: each slot's generation when a full acquisition last saw it held. */
  private final long[] seenWord;
  /** Under the monitor: when it was first seen so. */
  private final long[] seenAt;
  /** Under the monitor: permits that came back when their lease ended. */
  private long expired;
  /** The earliest clock reading at which a full acquisition looks at the slots again. */
  private volatile long nextScan = Long.MIN_VALUE / 2;
  /** An eighth of the lease: how often the slots are looked at while the bulkhead is full. */
  private final long scanEvery;

  private Bulkhead(Builder b) {
    this.limit = b.limit;
    this.leaseNanos = b.lease.toNanos();
    this.clock = b.clock;
    this.slots = new Slot[limit];
    for (int i = 0; i < limit; i++) {
      slots[i] = new Slot();
    }
    this.seenWord = new long[limit];
    this.seenAt = new long[limit];
    this.scanEvery = Math.max(1, leaseNanos / 8);
  }

  /** A builder for a bulkhead of {@code limit} permits (1 to {@link #MAX_LIMIT}). */
  public static Builder builder(int limit) {
    return new Builder(limit);
  }

  /** A permit if one is free, else {@link #NO_PERMIT}; never waits, allocates nothing. */
  public long tryAcquire() {
    long h = take();
    if (h == NO_PERMIT && reclaimExpired()) {
      h = take();
    }
    return h;
  }

  private long take() {
    int n = limit;
    // the thread's own starting slot: Lemire's multiply-shift range reduction, no division
    long mixed = (Thread.currentThread().getId() * 0x9E3779B97F4A7C15L) >>> 32;
    int start = (int) ((mixed * n) >>> 32);
    Slot[] s = slots;
    for (int i = 0, idx = start; i < n; i++) {
      Slot slot = s[idx];
      long a = slot.acquired;
      if (slot.released == a) {
        long g = next(a);
        if (ACQUIRED.compareAndSet(slot, a, g)) {
          return (g << SLOT_BITS) | idx;
        }
      }
      if (++idx == n) {
        idx = 0;
      }
    }
    return NO_PERMIT;
  }

  /**
   * Ends the permit {@code handle} names. Exactly once: true for the call that ended it; false for
   * a handle already released, whose lease ended, or that was never this bulkhead's.
   */
  public boolean release(long handle) {
    if (handle < 0) {
      return false;
    }
    long idx = handle & SLOT_MASK;
    if (idx >= limit) {
      return false;
    }
    long generation = handle >>> SLOT_BITS;
    Slot slot = slots[(int) idx];
    // Held in the handle's generation: released by writing it, no compare-and-set. The released
    // generation is read first: if the acquired one is still the handle's after that, nobody has
    // taken the slot again since, so the released one read was this permit's slot's own (read
    // the other way round, the slot could be released, taken and released again in between, and
    // a second release of a handle would write an older generation back and answer true).
    if (slot.released == generation || slot.acquired != generation) {
      return false;
    }
    RELEASED.setRelease(slot, generation);
    return true;
  }

  /** The generation after {@code g}: generations count modulo 2^43. */
  private static long next(long g) {
    return (g + 1) & GENERATION_MASK;
  }

  /**
   * Every slot is held: the slots seen held in the same generation for a whole lease come back.
   * Reads the clock, and looks at the slots at most once an eighth of a lease (so that refusals
   * under overload do not each scan every slot, one after the other); true if a slot came back.
   */
  private boolean reclaimExpired() {
    long now = clock.nanoTime();
    if (now - nextScan < 0) {
      return false;
    }
    synchronized (this) {
      if (now - nextScan < 0) {
        return false;
      }
      nextScan = now + scanEvery;
      return scan(now);
    }
  }

  /** Under the monitor: marks the held slots, and takes back those held a whole lease. */
  private boolean scan(long now) {
    boolean freed = false;
    for (int idx = 0; idx < limit; idx++) {
      Slot slot = slots[idx];
      long a = slot.acquired;
      long r = slot.released;
      if (r == a) {
        continue;
      }
      if (seenWord[idx] != a) {
        seenWord[idx] = a;   // first seen held in this generation: its lease is measured from now
        seenAt[idx] = now;
      } else if (now - seenAt[idx] >= leaseNanos
          && RELEASED.compareAndSet(slot, r, a)) {
        expired++;
        freed = true;
      }
    }
    return freed;
  }

  /** The most permits held at once. */
  public int limit() {
    return limit;
  }

  /** Permits held now (reads every slot). */
  public int inFlight() {
    int held = 0;
    for (int idx = 0; idx < limit; idx++) {
      Slot slot = slots[idx];
      long a = slot.acquired;
      held += slot.released == a ? 0 : 1;
    }
    return held;
  }

  /**
   * Permits acquired since the bulkhead was built (reads every slot; a slot's generations count
   * modulo 2^43, about a day of one slot taken and given back 100 million times a second).
   */
  public long acquired() {
    long total = 0;
    for (int idx = 0; idx < limit; idx++) {
      total += slots[idx].acquired;   // every generation is an acquisition
    }
    return total;
  }

  /** Permits that came back because their lease ended. */
  public synchronized long expired() {
    return expired;
  }

  @Override
  public String toString() {
    return "Bulkhead[" + inFlight() + " of " + limit + " in flight]";
  }

  /** Settings of a {@link Bulkhead}. */
  public static final class Builder {
    private final int limit;
    private Duration lease = Duration.ofSeconds(30);
    private Clock clock = Clock.system();

    private Builder(int limit) {
      if (limit < 1 || limit > MAX_LIMIT) {
        throw new IllegalArgumentException("a bulkhead's limit must be between 1 and "
            + MAX_LIMIT + " but was " + limit);
      }
      this.limit = limit;
    }

    /**
     * How long a permit may stay held once the bulkhead is found full with it (default 30 s; at
     * least 1 ms, at most 1 day).
     */
    public Builder lease(Duration lease) {
      this.lease = ConcurrencyLimiter.Builder.checkLease(lease);
      return this;
    }

    /** The clock leases are measured on (tests pass a manual one). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** The bulkhead. */
    public Bulkhead build() {
      return new Bulkhead(this);
    }
  }
}

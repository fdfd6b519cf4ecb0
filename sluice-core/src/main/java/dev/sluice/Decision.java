package dev.sluice;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;

/**
 * The answer to one operation on one key: whether it was admitted, and the figures a caller
 * needs next (for example to build HTTP headers) without a second call.
 *
 * <p>Immutable and thread-safe. Times are in nanoseconds; {@link #retryAfterNanos()} is
 * {@link Long#MAX_VALUE} when the cost can never be admitted (it exceeds a capacity). With several
 * limits on a key, the figures are those of the {@link #limit() deciding limit}: when rejected,
 * the limit that asks for the longest wait; when admitted, the one with the least share of its
 * capacity left. {@link #perLimit()} has every limit's own figures.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#operations">docs/semantics.md, "Operations"</a>.
 */
public sealed class Decision permits Engine.Metered {
  private final boolean allowed;
  private final boolean reachedCapacity;
  private final double remaining;
  private final long retryAfterNanos;
  private final long resetAfterNanos;
  private final long delayNanos;
  private final Limit limit;
  private final List<Decision> perLimit;
  private final boolean degraded;
  private final boolean leased;
  private final boolean borrowed;
  private final boolean unavailable;

  Decision(boolean allowed, boolean reachedCapacity, double remaining, long retryAfterNanos,
      long resetAfterNanos, long delayNanos, Limit limit, List<Decision> perLimit) {
    this(allowed, reachedCapacity, remaining, retryAfterNanos, resetAfterNanos, delayNanos, limit,
        perLimit, false, false);
  }

  Decision(boolean allowed, boolean reachedCapacity, double remaining, long retryAfterNanos,
      long resetAfterNanos, long delayNanos, Limit limit, List<Decision> perLimit,
      boolean degraded) {
    this(allowed, reachedCapacity, remaining, retryAfterNanos, resetAfterNanos, delayNanos, limit,
        perLimit, degraded, false);
  }

  Decision(boolean allowed, boolean reachedCapacity, double remaining, long retryAfterNanos,
      long resetAfterNanos, long delayNanos, Limit limit, List<Decision> perLimit,
      boolean degraded, boolean leased) {
    this(allowed, reachedCapacity, remaining, retryAfterNanos, resetAfterNanos, delayNanos, limit,
        perLimit, degraded, leased, false);
  }

  Decision(boolean allowed, boolean reachedCapacity, double remaining, long retryAfterNanos,
      long resetAfterNanos, long delayNanos, Limit limit, List<Decision> perLimit,
      boolean degraded, boolean leased, boolean borrowed) {
    this(allowed, reachedCapacity, remaining, retryAfterNanos, resetAfterNanos, delayNanos, limit,
        perLimit, degraded, leased, borrowed, false);
  }

  /** The refusal of a store that cannot be asked, under {@link StoreFailure#FAIL_CLOSED}. */
  static Decision unavailable(long retryAfterNanos, Limit limit) {
    return new Decision(false, false, 0, retryAfterNanos, retryAfterNanos, 0, limit, null, true,
        false, false, true);
  }

  private Decision(boolean allowed, boolean reachedCapacity, double remaining,
      long retryAfterNanos, long resetAfterNanos, long delayNanos, Limit limit,
      List<Decision> perLimit, boolean degraded, boolean leased, boolean borrowed,
      boolean unavailable) {
    this.unavailable = unavailable;
    this.borrowed = borrowed;
    this.degraded = degraded;
    this.leased = leased;
    this.allowed = allowed;
    this.reachedCapacity = reachedCapacity;
    this.remaining = remaining;
    this.retryAfterNanos = retryAfterNanos;
    this.resetAfterNanos = resetAfterNanos;
    this.delayNanos = delayNanos;
    this.limit = limit;
    this.perLimit = perLimit;
  }

  /**
   * Whether the request was admitted. For {@code fillUp}, which always counts the cost, whether
   * the bucket stayed below capacity ({@code !reachedCapacity()}). For {@code check}, whether a
   * {@code tryAcquire} would have been admitted.
   */
  public final boolean isAllowed() {
    return allowed;
  }

  /** Whether a {@code fillUp} reached capacity at that instant ("full" is an event, not a state). */
  public final boolean reachedCapacity() {
    return reachedCapacity;
  }

  /** Whether this cost can never be admitted, because it exceeds the capacity. */
  public final boolean isNeverAdmissible() {
    return !allowed && retryAfterNanos() == Long.MAX_VALUE;
  }

  /** Capacity left after the operation ({@code C - L}), in units of cost; never negative. */
  public double remaining() {
    return remaining;
  }

  /** The level after the operation ({@code capacity - remaining}), in units of cost. */
  public final double level() {
    return Math.max(0, limit().capacity() - remaining());
  }

  /**
   * Nanoseconds until the same cost would be admitted: zero when admitted, {@link Long#MAX_VALUE}
   * when never. Exact when nothing else touches the key meanwhile.
   */
  public long retryAfterNanos() {
    return retryAfterNanos;
  }

  /** {@link #retryAfterNanos()} as a Duration; {@link ChronoUnit#FOREVER} when never. */
  public final Duration retryAfter() {
    long r = retryAfterNanos();
    return r == Long.MAX_VALUE ? ChronoUnit.FOREVER.getDuration() : Duration.ofNanos(r);
  }

  /** Nanoseconds until the key holds nothing (the bucket is empty, the window is over). */
  public long resetAfterNanos() {
    return resetAfterNanos;
  }

  /** {@link #resetAfterNanos()} as a Duration. */
  public final Duration resetAfter() {
    return Duration.ofNanos(resetAfterNanos());
  }

  /**
   * For {@code reserve}: nanoseconds the caller must wait before proceeding so that output runs
   * at the leak rate. Zero for every other operation.
   */
  public final long delayNanos() {
    return delayNanos;
  }

  /** {@link #delayNanos()} as a Duration. */
  public final Duration delay() {
    return Duration.ofNanos(delayNanos);
  }

  /**
   * Whether the shared store could not be asked and the limiter's {@link StoreFailure} policy
   * answered instead (the figures are then those of the policy, not of the store).
   */
  public final boolean isDegraded() {
    return degraded;
  }

  /**
   * Whether nothing could decide: the shared store could not be asked and the failure policy is
   * {@link StoreFailure#FAIL_CLOSED}, so the request is refused without any limit having been
   * consulted. HTTP answers {@code 503}. A refusal by the {@link StoreFailure#FALLBACK_IN_MEMORY
   * fallback} limiter is {@linkplain #isDegraded() degraded} but not unavailable: a limit refused
   * it, and HTTP answers {@code 429}.
   */
  public final boolean isUnavailable() {
    return unavailable;
  }

  /**
   * A copy of {@code other}; or, when it is null, a local admission from a lease that leaves
   * {@code remaining} held (for fleet mode's one allocation site on its hot path).
   */
  Decision(Decision other, double remaining, long resetAfterNanos, Limit limit) {
    if (other == null) {
      this.allowed = true;
      this.reachedCapacity = false;
      this.remaining = remaining;
      this.retryAfterNanos = 0;
      this.resetAfterNanos = resetAfterNanos;
      this.delayNanos = 0;
      this.limit = limit;
      this.perLimit = null;
      this.degraded = false;
      this.leased = true;
      this.borrowed = false;
      this.unavailable = false;
    } else {
      this.allowed = other.allowed;
      this.reachedCapacity = other.reachedCapacity;
      this.remaining = other.remaining();
      this.retryAfterNanos = other.retryAfterNanos();
      this.resetAfterNanos = other.resetAfterNanos();
      this.delayNanos = other.delayNanos;
      this.limit = other.limit();
      this.perLimit = other.perLimitOrNull();
      this.degraded = other.degraded;
      this.leased = other.leased;
      this.borrowed = other.borrowed;
      this.unavailable = other.unavailable;
    }
  }

  /** This decision, marked degraded. */
  Decision degraded() {
    return new Decision(allowed, reachedCapacity, remaining(), retryAfterNanos(),
        resetAfterNanos(), delayNanos, limit(), perLimitOrNull(), true, leased, borrowed);
  }

  /**
   * Whether a limiter in fleet mode ({@link Sluice.Builder#leases}) answered from its local lease
   * of the shared bucket, without a store call. {@link #remaining()} is then what this instance
   * still holds of its lease, not the shared bucket's headroom.
   */
  public final boolean isLeased() {
    return leased;
  }

  /**
   * Whether a {@link Group group}'s key was admitted above its assured limit, from the parent's
   * idle capacity. False when it was admitted within its assured limit, when it was rejected, and
   * for limiters without a group.
   */
  public final boolean isBorrowed() {
    return borrowed;
  }

  /** The limit that decided. */
  public Limit limit() {
    return limit;
  }

  /**
   * Every limit's own decision, in the order the limits were configured; a one-element list of
   * this decision when there is one limit. A limit's {@link #isAllowed()} there says whether that
   * limit alone would have admitted.
   */
  public final List<Decision> perLimit() {
    List<Decision> p = perLimitOrNull();
    return p == null ? List.of(this) : p;
  }

  /**
   * The per-limit list as kept (null when there is one limit). The one subclass, the in-memory
   * meter's on several buckets, computes it, and the deciding limit and its figures, when asked
   * for instead of keeping them (one object per decision, and no arithmetic a caller does
   * not ask for).
   */
  List<Decision> perLimitOrNull() {
    return perLimit;
  }

  @Override
  public final String toString() {
    StringBuilder b = new StringBuilder(allowed ? "allowed" : "rejected");
    b.append(" remaining=").append(Checks.format(remaining()));
    if (!allowed || reachedCapacity) {
      b.append(" retryAfter=").append(
          retryAfterNanos() == Long.MAX_VALUE ? "never" : Duration.ofNanos(retryAfterNanos()));
    }
    b.append(" resetAfter=").append(Duration.ofNanos(resetAfterNanos()));
    if (delayNanos > 0) {
      b.append(" delay=").append(Duration.ofNanos(delayNanos));
    }
    if (reachedCapacity) {
      b.append(" reachedCapacity");
    }
    if (degraded) {
      b.append(" degraded");
    }
    if (leased) {
      b.append(" leased");
    }
    if (borrowed) {
      b.append(" borrowed");
    }
    return b.append(" limit=").append(limit().name()).toString();
  }
}

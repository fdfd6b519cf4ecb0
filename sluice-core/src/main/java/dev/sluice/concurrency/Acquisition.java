package dev.sluice.concurrency;

/**
 * The answer to an acquire: a permit, or a refusal that says why, with the key's limit, the
 * weight in flight and the waiters at the moment of the answer.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public final class Acquisition {
  private final Permit permit;
  private final Refusal refusal;
  private final int limit;
  private final int inFlight;
  private final int waiting;
  private final long waitedNanos;
  private final boolean degraded;
  private final boolean borrowed;
  /**
   * For a permit taken on an in-memory key's lock-free lane: the key, whose weight in flight is
   * read when asked (a count kept on that path would be a point every thread writes).
   */
  private final InMemoryConcurrencyLimiter.KeyState lane;

  Acquisition(Permit permit, Refusal refusal, int limit, int inFlight, int waiting,
      long waitedNanos) {
    this(permit, refusal, limit, inFlight, waiting, waitedNanos, false, false);
  }

  Acquisition(Permit permit, Refusal refusal, int limit, int inFlight, int waiting,
      long waitedNanos, boolean degraded) {
    this(permit, refusal, limit, inFlight, waiting, waitedNanos, degraded, false);
  }

  Acquisition(Permit permit, Refusal refusal, int limit, int inFlight, int waiting,
      long waitedNanos, boolean degraded, boolean borrowed) {
    this(permit, refusal, limit, inFlight, waiting, waitedNanos, degraded, borrowed, null);
  }

  /** A permit taken on {@code lane}'s lock-free path: its weight in flight is read when asked. */
  Acquisition(Permit permit, int limit, InMemoryConcurrencyLimiter.KeyState lane) {
    this(permit, null, limit, 0, 0, 0, false, false, lane);
  }

  private Acquisition(Permit permit, Refusal refusal, int limit, int inFlight, int waiting,
      long waitedNanos, boolean degraded, boolean borrowed,
      InMemoryConcurrencyLimiter.KeyState lane) {
    this.lane = lane;
    this.permit = permit;
    this.refusal = refusal;
    this.limit = limit;
    this.inFlight = inFlight;
    this.waiting = waiting;
    this.waitedNanos = waitedNanos;
    if (permit != null && waitedNanos > 0) {
      permit.waitedNanos = waitedNanos;
    }
    this.degraded = degraded;
    this.borrowed = borrowed;
  }

  /** This answer, marked as given by the store failure policy. */
  Acquisition degraded() {
    return new Acquisition(permit, refusal, limit, inFlight(), waiting, waitedNanos, true,
        borrowed);
  }

  /** Whether a permit was acquired. */
  public boolean isAcquired() {
    return permit != null;
  }

  /**
   * The permit, to release when the call ends.
   *
   * @throws IllegalStateException if none was acquired (see {@link #refusal()})
   */
  public Permit permit() {
    if (permit == null) {
      throw new IllegalStateException("no permit was acquired: " + refusal);
    }
    return permit;
  }

  /** Why no permit was acquired; null if one was. */
  public Refusal refusal() {
    return refusal;
  }

  /** The key's limit: the most weight in flight at once. */
  public int limit() {
    return limit;
  }

  /**
   * The key's weight in flight when answered (the new permit included). For a permit an
   * in-memory key's lock-free lane granted, the weight in flight when asked: that path keeps no
   * count of its own.
   */
  public int inFlight() {
    return lane != null ? lane.laneInFlight() : inFlight;
  }

  /** Acquisitions waiting on the key when answered. */
  public int waiting() {
    return waiting;
  }

  /**
   * Whether the answer came from the store failure policy rather than the shared store (down,
   * slow, or its breaker open): a refusal of {@link dev.sluice.StoreFailure#FAIL_CLOSED}
   * ({@link Refusal#STORE_UNAVAILABLE}), a permit of {@code FAIL_OPEN} that counts nowhere, or
   * an answer of the in-memory fallback.
   */
  public boolean isDegraded() {
    return degraded;
  }

  /**
   * Whether the permit borrowed from its {@link ConcurrencyGroup}: it took the key above its
   * assured share (false without a group, and for a refusal).
   */
  public boolean isBorrowed() {
    return borrowed;
  }

  /** How long this acquisition waited, on the limiter's clock. */
  public long waitedNanos() {
    return waitedNanos;
  }

  @Override
  public String toString() {
    return (permit != null ? "acquired " + permit : "refused (" + refusal + ")") + ", in flight "
        + inFlight + " of " + limit + ", waiting " + waiting + (borrowed ? ", borrowed" : "")
        + (degraded ? ", degraded" : "");
  }
}

package dev.sluice.concurrency;

/**
 * The answer to an acquire: a permit, or a refusal that says why, with the key's limit, the
 * weight in flight and the waiters at the moment of the answer.
 */
public final class Acquisition {
  private final Permit permit;
  private final Refusal refusal;
  private final int limit;
  private final int inFlight;
  private final int waiting;
  private final long waitedNanos;

  Acquisition(Permit permit, Refusal refusal, int limit, int inFlight, int waiting,
      long waitedNanos) {
    this.permit = permit;
    this.refusal = refusal;
    this.limit = limit;
    this.inFlight = inFlight;
    this.waiting = waiting;
    this.waitedNanos = waitedNanos;
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

  /** The key's weight in flight when answered (the new permit included). */
  public int inFlight() {
    return inFlight;
  }

  /** Acquisitions waiting on the key when answered. */
  public int waiting() {
    return waiting;
  }

  /** How long this acquisition waited, on the limiter's clock. */
  public long waitedNanos() {
    return waitedNanos;
  }

  @Override
  public String toString() {
    return (permit != null ? "acquired " + permit : "refused (" + refusal + ")") + ", in flight "
        + inFlight + " of " + limit + ", waiting " + waiting;
  }
}

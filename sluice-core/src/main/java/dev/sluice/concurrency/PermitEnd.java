package dev.sluice.concurrency;

/**
 * A permit that ended, as listeners see it ({@link ConcurrencyLimiter.Builder#onPermitEnd}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 *
 * @param key the key it was held under
 * @param weight its weight
 * @param heldNanos from acquisition to release (or to the lease's end for {@link Outcome#EXPIRED})
 * @param outcome how it ended
 * @param inFlight the key's weight in flight when it was taken, itself included
 * @param waitedNanos how long its acquisition waited for it in the limiter's queue (0 when it was
 *     granted at once)
 * @param pausedNanos how much of the time it was held, and of as long again before it was
 *     granted, this process could not run, by the limiter's clock ({@code Clock.pausedNanos}; 0
 *     when none or unknown): a pause just before the grant makes a call late as surely as one
 *     while it is held (a request that arrived in the pause reaches the limiter with its deadline
 *     spent)
 */
public record PermitEnd(String key, int weight, long heldNanos, Outcome outcome, int inFlight,
    long waitedNanos, long pausedNanos) {
  /** A permit granted without a wait, held through no pause. */
  public PermitEnd(String key, int weight, long heldNanos, Outcome outcome, int inFlight) {
    this(key, weight, heldNanos, outcome, inFlight, 0, 0);
  }

  /**
   * Whether a pause of this process, while it was held or as long before its grant ({@link
   * #pausedNanos}), is at least a quarter of the time it was held: its latency, and a timeout the
   * pause caused, say nothing of the backend, and the adaptive limits do not learn from it.
   */
  public boolean heldThroughAPause() {
    return pausedNanos > 0 && 4 * pausedNanos >= heldNanos;
  }

  /**
   * Whether this is a drop that its wait explains rather than the backend: ended
   * {@link Outcome#DROPPED} after waiting in the limiter's queue longer than it was then held. A
   * caller that measures its deadline from before the wait reports such a call late, though the
   * backend answered at its pace; the adaptive limits read it as a latency sample, not as a drop,
   * so that their own queue cannot lower them (a lower limit, a longer wait, more such drops).
   */
  public boolean droppedByItsWait() {
    return outcome == Outcome.DROPPED && waitedNanos > heldNanos;
  }
}

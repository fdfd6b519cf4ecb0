package dev.sluice.concurrency;

/**
 * Why an acquisition got no permit.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public enum Refusal {
  /** Every permit is in flight and the caller did not wait (tryAcquire). */
  FULL,
  /**
   * The acquisition's {@link Priority} has used its share of the key's permits (permits are
   * left, kept for higher priorities): load shed.
   */
  SHED,
  /** Every permit is in flight and the wait queue is full (or a higher priority took its place). */
  QUEUE_FULL,
  /** The caller waited its whole timeout. */
  TIMED_OUT,
  /**
   * The wait the acquisition would have, estimated from how long the key's permits are held and
   * the waiters before it, is longer than its timeout: refused at once instead of queueing and
   * timing out later (seed 002's deadline-aware check).
   */
  DEADLINE,
  /**
   * The key's wait queue is shedding (CoDel, {@code ConcurrencyLimiter.Builder.codel}): its waits
   * stayed above the target for a whole interval, so acquisitions that would wait, and waiters
   * already past the target, are refused until the queue drains or a wait is short again.
   */
  OVERLOADED,
  /** The weight asked for is above the key's limit: no wait would ever serve it. */
  TOO_HEAVY,
  /** The limiter holds its maximum of keys and none of them is idle. */
  KEYS_FULL,
  /** The waiting thread was interrupted. */
  INTERRUPTED,
  /**
   * The shared store could not be asked (an error, a timeout, or its circuit breaker open) and
   * the limiter fails closed ({@link dev.sluice.StoreFailure#FAIL_CLOSED}).
   */
  STORE_UNAVAILABLE,
  /** The limiter is closed. */
  CLOSED
}

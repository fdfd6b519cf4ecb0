package dev.sluice.concurrency;

/** Why an acquisition got no permit. */
public enum Refusal {
  /** Every permit is in flight and the caller did not wait (tryAcquire). */
  FULL,
  /** Every permit is in flight and the wait queue is full. */
  QUEUE_FULL,
  /** The caller waited its whole timeout. */
  TIMED_OUT,
  /** The weight asked for is above the key's limit: no wait would ever serve it. */
  TOO_HEAVY,
  /** The limiter holds its maximum of keys and none of them is idle. */
  KEYS_FULL,
  /** The waiting thread was interrupted. */
  INTERRUPTED,
  /** The limiter is closed. */
  CLOSED
}

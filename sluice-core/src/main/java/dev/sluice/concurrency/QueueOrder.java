package dev.sluice.concurrency;

/** Which waiter a released permit goes to first. */
public enum QueueOrder {
  /** The oldest waiter: fair while the backend keeps up. */
  FIFO,
  /**
   * The newest waiter: under overload the oldest waiters' callers have likely given up already,
   * so serving the newest keeps latency bounded for the calls that can still succeed.
   */
  LIFO
}

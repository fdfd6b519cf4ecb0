package dev.sluice.concurrency;

/**
 * Which waiter a released permit goes to first.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#fair-queuing-one-flows-flood-does-not-starve-the-others">docs/concurrency.md, "Fair queuing: one flow's flood does not starve the others"</a>.
 */
public enum QueueOrder {
  /** The oldest waiter: fair while the backend keeps up. */
  FIFO,
  /**
   * The newest waiter: under overload the oldest waiters' callers have likely given up already,
   * so serving the newest keeps latency bounded for the calls that can still succeed.
   */
  LIFO
}

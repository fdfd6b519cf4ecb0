package dev.sluice.concurrency;

/**
 * How a permit ended: what adaptive limits learn from.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public enum Outcome {
  /** The call succeeded; its latency is a sample of the backend's. */
  SUCCESS,
  /** The call failed or timed out because the backend is overloaded: a sign to back off. */
  DROPPED,
  /** The call ended for reasons that say nothing of the backend (a client error, a cancel). */
  IGNORED,
  /** Nobody released the permit: its lease ran out and the limiter took it back. */
  EXPIRED
}

package dev.sluice.http;

/**
 * Whose requests an HTTP concurrency rule counts together, which decides what a refused request
 * is told ({@link dev.sluice.internal.ConcurrencyAnswers#problem}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#in-http-filters">docs/concurrency.md, "In HTTP filters"</a>.
 */
public enum ConcurrencyScope {
  /**
   * Each client's requests apart (a client address, an API key): a refusal is the client's doing,
   * {@code 429 Too Many Requests}.
   */
  CLIENT,
  /** Every request of the rule's route together: a refusal sheds load, {@code 503}. */
  ROUTE,
  /** Every request the rule matches, whatever the route, together: shedding, {@code 503}. */
  GLOBAL
}

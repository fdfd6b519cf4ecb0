package dev.sluice.spi;

/**
 * Thrown by a {@link DecisionStore} when it could not reach the store at all (connection refused
 * or lost, not connected, no connection to be had in time): evidence that the store is down, on
 * which a limiter's circuit breaker opens at once. Slow answers and other failures are thrown as
 * other runtime exceptions and open it only when they are a large share of recent calls.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public class StoreUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}

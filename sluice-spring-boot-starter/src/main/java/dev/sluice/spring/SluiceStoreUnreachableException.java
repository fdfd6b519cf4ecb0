package dev.sluice.spring;

/**
 * Sluice's shared store could not be reached when the application started: it names the store
 * it tried and what the failure policy does once the application runs. The application does not
 * start; {@link SluiceStoreFailureAnalyzer} prints the reason and what to do.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#bad-settings-fail-startup">docs/spring.md, "Bad settings fail startup"</a>.
 */
public class SluiceStoreUnreachableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String store;
  private final String failurePolicy;

  public SluiceStoreUnreachableException(String store, String failurePolicy, Throwable cause) {
    super("Sluice cannot reach its store " + store + ": " + cause.getMessage(), cause);
    this.store = store;
    this.failurePolicy = failurePolicy;
  }

  /** The store tried, as its URI or seeds (without credentials). */
  public String store() {
    return store;
  }

  /** The failure policy ({@code closed}, {@code open}, {@code fallback}). */
  public String failurePolicy() {
    return failurePolicy;
  }
}

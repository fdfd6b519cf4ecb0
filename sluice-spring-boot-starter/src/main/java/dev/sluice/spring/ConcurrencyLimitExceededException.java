package dev.sluice.spring;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.ConcurrencyAnswers;

/**
 * A call of a {@link ConcurrencyLimited} method got no permit. The starter answers it in Spring
 * MVC and WebFlux with {@link #problem()}: {@code 503} for a method-wide limit (load shed),
 * {@code 429} for a limit per key, {@code Retry-After: 1}; {@link #acquisition()} says why.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#concurrency-limits-sluiceconcurrency">docs/spring.md, "Concurrency limits (sluice.concurrency)"</a>.
 */
public class ConcurrencyLimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Acquisition acquisition;
  private final String limit;
  private final String key;
  private final ConcurrencyScope scope;

  public ConcurrencyLimitExceededException(String limit, String key, ConcurrencyScope scope,
      Acquisition acquisition) {
    super(ConcurrencyAnswers.problem(acquisition, scope, limit).detail() + " (key " + key + ")");
    this.limit = limit;
    this.key = key;
    this.scope = scope;
    this.acquisition = acquisition;
  }

  /** The refusal: its reason, the limit, the weight in flight. */
  public Acquisition acquisition() {
    return acquisition;
  }

  public String limit() {
    return limit;
  }

  public String key() {
    return key;
  }

  /** The answer an HTTP client gets: 503 (method-wide) or 429 (per key). */
  public RateLimitProblem problem() {
    return ConcurrencyAnswers.problem(acquisition, scope, limit);
  }
}

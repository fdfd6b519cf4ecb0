package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.http.RateLimitProblem;

/**
 * A call of a {@link RateLimited} method was refused: the limit is exhausted ({@code 429}), or
 * the shared store is down and the failure policy refuses ({@code 503}, {@link #isUnavailable()}).
 * The starter answers it in Spring MVC and WebFlux with the problem document, {@code Retry-After}
 * and the RateLimit fields; elsewhere, {@link #decision()} says when to retry.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#ratelimited-methods">docs/spring.md, "@RateLimited methods"</a>.
 */
public class RateLimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Decision decision;
  private final String policy;
  private final String key;
  private final double cost;

  public RateLimitExceededException(String policy, String key, double cost, Decision decision) {
    super(RateLimitProblem.of(decision, cost).detail() + " (policy " + policy + ", key " + key + ")");
    this.policy = policy;
    this.key = key;
    this.cost = cost;
    this.decision = decision;
  }

  /** The refusing decision: {@link Decision#retryAfterNanos()}, the limit, what is left. */
  public Decision decision() {
    return decision;
  }

  public String policy() {
    return policy;
  }

  public String key() {
    return key;
  }

  public double cost() {
    return cost;
  }

  /** True when the store was down and the failure policy refused (an HTTP 503, not a 429). */
  public boolean isUnavailable() {
    return decision.isUnavailable();
  }

  /** The HTTP answer: status, title, detail. */
  public RateLimitProblem problem() {
    return RateLimitProblem.of(decision, cost);
  }
}

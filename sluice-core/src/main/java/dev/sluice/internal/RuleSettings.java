package dev.sluice.internal;

import dev.sluice.RateLimiter;
import java.util.Set;
import java.util.function.ToDoubleFunction;

/**
 * A rule's settings, as {@link dev.sluice.http.RuleBuilder} checked them.
 *
 * @param pattern the path pattern, as written
 * @param methods the HTTP methods it applies to, upper case; empty for all
 * @param limiter the limiter its requests are held to
 * @param key how a request's key is found
 * @param cost a request's cost
 * @param queue whether requests that fit wait for their delay (queue mode)
 * @param <Q> the request type
 * @param <K> the key resolver type
 */
public record RuleSettings<Q, K>(String pattern, Set<String> methods, RateLimiter limiter, K key,
    ToDoubleFunction<Q> cost, boolean queue) {

  /** Whether the rule applies to requests of {@code method}. */
  public boolean appliesTo(String method) {
    return methods.isEmpty() || methods.contains(method);
  }

  /** The methods and the pattern, as messages name the rule: {@code POST /api/**}. */
  @Override
  public String toString() {
    return (methods.isEmpty() ? "*" : String.join(",", methods)) + " " + pattern;
  }
}

package dev.sluice.internal;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.http.RateLimitProblem;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * A concurrency rule's settings, as {@link dev.sluice.http.ConcurrencyRuleBuilder} checked them.
 *
 * @param pattern the path pattern, as written
 * @param methods the HTTP methods it applies to, upper case; empty for all
 * @param limiter the limiter its requests count against
 * @param scope whose requests count together
 * @param clientKey how a request's client key is found ({@link ConcurrencyScope#CLIENT} only)
 * @param flow how a request's flow for fair queuing is found; null when the rule names none
 * @param priority a request's priority (null reads as {@link Priority#NORMAL})
 * @param maxWait how long a request may wait for a permit
 * @param deadlineHeaders headers read, in order, for the request's deadline ({@link Deadlines})
 * @param retryAfterSeconds the {@code Retry-After} of a refusal
 * @param limitName the limit's name in refusals
 * @param <Q> the request type
 * @param <K> the key resolver type
 */
public record ConcurrencyRuleSettings<Q, K>(String pattern, Set<String> methods,
    ConcurrencyLimiter limiter, ConcurrencyScope scope, K clientKey, K flow,
    Function<Q, Priority> priority, Duration maxWait, List<String> deadlineHeaders,
    long retryAfterSeconds, String limitName) {

  /** The key every request of a {@link ConcurrencyScope#GLOBAL} rule counts under. */
  public static final String GLOBAL_KEY = "global";

  /**
   * The answer to a request without a key under {@link dev.sluice.http.MissingKey#REJECT}: 400, naming the limit
   * and the rule.
   */
  public RateLimitProblem missingKey() {
    return new RateLimitProblem(400, "Missing concurrency key", "this request carries no key that"
        + " the concurrency limit " + limitName + " of rule " + pattern + " counts clients by",
        "\"limit\":" + RateLimitProblem.quote(limitName) + ",\"reason\":\"missing_key\"");
  }

  /** Whether the rule applies to requests of {@code method}. */
  public boolean appliesTo(String method) {
    return methods.isEmpty() || methods.contains(method);
  }

  /** The key of a route or global rule ({@code route:<pattern>}, {@code global}); null for CLIENT. */
  public String sharedKey() {
    return sharedKey(scope, pattern);
  }

  /**
   * The key every request of a rule of {@code scope} for {@code pattern} counts under
   * ({@code route:<pattern>}, {@code global}); null for {@link ConcurrencyScope#CLIENT}.
   */
  public static String sharedKey(ConcurrencyScope scope, String pattern) {
    return scope == ConcurrencyScope.ROUTE ? "route:" + pattern
        : scope == ConcurrencyScope.GLOBAL ? GLOBAL_KEY : null;
  }

  /** A request's priority: the function's, NORMAL when it answers null. */
  public Priority priorityOf(Q request) {
    Priority p = priority.apply(request);
    return p == null ? Priority.NORMAL : p;
  }

  /**
   * How long a request for a permit of {@code key} may wait: {@link #maxWait}, or less when a
   * deadline header says its caller gives up sooner: the deadline less what the work is expected
   * to take ({@link ConcurrencyLimiter#usefulWait}); 1 ns when that leaves no time, so that a
   * full key refuses the request for its deadline ({@code Refusal.DEADLINE}).
   *
   * @param headerOf the request's header value by name; null when absent
   * @throws IllegalArgumentException naming the header and the value if a deadline cannot be read
   */
  public Duration waitFor(String key, Function<String, String> headerOf) {
    Duration deadline = deadlineHeaders.isEmpty() ? null : Deadlines.find(deadlineHeaders,
        headerOf);
    if (deadline == null || maxWait.isZero()) {
      return maxWait;
    }
    Duration useful = limiter.usefulWait(key, deadline);
    if (useful.isNegative() || useful.isZero()) {
      // no useful wait: the shortest, so that a full key refuses it for its deadline (DEADLINE)
      return Duration.ofNanos(1);
    }
    return useful.compareTo(maxWait) < 0 ? useful : maxWait;
  }

  /** The methods, the pattern and the scope, as messages name the rule. */
  @Override
  public String toString() {
    return (methods.isEmpty() ? "*" : String.join(",", methods)) + " " + pattern + " (" + scope
        + ")";
  }
}

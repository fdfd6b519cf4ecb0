package dev.sluice.http;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.internal.Deadlines;
import dev.sluice.internal.RuleAccess;
import dev.sluice.internal.RequestKeys;
import dev.sluice.internal.RuleChecks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * What the HTTP filters' concurrency rule builders share (the servlet filter's
 * {@code ConcurrencyRule.Builder}, the WebFlux filter's {@code WebConcurrencyRule.Builder}): the
 * methods, the limiter, whose requests count together, priorities, the wait, and the
 * {@code Retry-After} of a refusal.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#in-http-filters">docs/concurrency.md, "In HTTP filters"</a>.
 *
 * @param <Q> the request type the priority function reads
 * @param <K> the key resolver type of the filter
 * @param <B> the builder itself
 */
public abstract class ConcurrencyRuleBuilder<Q, K, B extends ConcurrencyRuleBuilder<Q, K, B>> {
  static {
    RuleAccess.installConcurrencyRules(ConcurrencyRuleBuilder::settings);
  }

  private final String pattern;
  private Set<String> methods = Set.of();
  private ConcurrencyLimiter limiter;
  private String limitName;
  private ConcurrencyScope scope;
  private K clientKey;
  private K flow;
  private Function<Q, Priority> priority = request -> Priority.NORMAL;
  private Duration maxWait = Duration.ZERO;
  private long retryAfterSeconds = 1;
  private List<String> deadlineHeaders = List.of(Deadlines.GRPC_TIMEOUT);

  /**
   * A builder for requests whose path matches {@code pattern}.
   *
   * @throws IllegalArgumentException if the pattern does not start with {@code /}
   */
  protected ConcurrencyRuleBuilder(String pattern) {
    if (pattern == null || !pattern.startsWith("/")) {
      throw new IllegalArgumentException("a path pattern starts with '/' but was "
          + (pattern == null ? "null" : "'" + pattern + "'"));
    }
    this.pattern = pattern;
  }

  /** This builder. */
  protected abstract B self();

  /**
   * HTTP methods this rule applies to, in any case (default: all).
   *
   * @throws IllegalArgumentException naming one that is not an HTTP method
   */
  public B methods(String... methods) {
    this.methods = RuleChecks.methods(methods);
    return self();
  }

  /**
   * The limiter the requests count against (its limit, store and shares); a refusal names it by
   * the rule's path pattern.
   */
  public B limiter(ConcurrencyLimiter limiter) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    return self();
  }

  /** As {@link #limiter(ConcurrencyLimiter)}, named {@code name} in refusals. */
  public B limiter(String name, ConcurrencyLimiter limiter) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("a concurrency limit's name must not be blank");
    }
    this.limitName = name;
    return limiter(limiter);
  }

  /**
   * Each client's requests apart, under the key {@code key} resolves; a refusal is {@code 429}.
   * A request without a key is answered as the filter's {@link MissingKey} says: {@code 400} by
   * default, as for rate limits.
   */
  public B perClient(K key) {
    this.clientKey = Objects.requireNonNull(key, "key");
    this.scope = ConcurrencyScope.CLIENT;
    return self();
  }

  /** Every request of this rule's route as one key ({@code route:<pattern>}); a refusal is 503. */
  public B perRoute() {
    this.scope = ConcurrencyScope.ROUTE;
    return self();
  }

  /** Every request this rule matches as one key ({@code global}); a refusal is 503. */
  public B global() {
    this.scope = ConcurrencyScope.GLOBAL;
    return self();
  }

  /**
   * Each request's flow for fair queuing (a tenant, a user, a client), as {@code flow} resolves
   * it from the request; a request it finds none for is the flow of everyone unnamed. Its waiters
   * are fair among flows when the limiter has {@link
   * dev.sluice.concurrency.ConcurrencyLimiter.Builder#fairQueuing fair queuing}; without it the
   * flow is not read.
   */
  public B flow(K flow) {
    this.flow = Objects.requireNonNull(flow, "flow");
    return self();
  }

  /** Each request's priority (default {@link Priority#NORMAL}; null reads as NORMAL). */
  public B priority(Function<Q, Priority> priority) {
    this.priority = Objects.requireNonNull(priority, "priority");
    return self();
  }

  /**
   * How long a request may wait for a permit (default 0: refused at once when none is free); at
   * most 1 minute.
   */
  public B maxWait(Duration wait) {
    Objects.requireNonNull(wait, "wait");
    if (wait.isNegative() || wait.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new IllegalArgumentException("maxWait must be between 0 and 1 minute but was " + wait);
    }
    this.maxWait = wait;
    return self();
  }

  /**
   * Headers that carry a request's deadline, read in this order, the first present winning
   * (default: {@code grpc-timeout}; none turns deadlines off). A request waits for a permit at
   * most the smaller of {@link #maxWait} and its deadline less what its work is expected to take
   * ({@link ConcurrencyRuleSettings#waitFor}), so a deadline-aware limiter refuses it at once
   * when its expected wait is longer ({@code Refusal.DEADLINE}); a value that is not a deadline is
   * answered 400 (formats: {@link Deadlines}).
   *
   * @throws IllegalArgumentException naming a name that is not an HTTP header name
   */
  public B deadlineHeaders(String... headers) {
    Objects.requireNonNull(headers, "headers");
    List<String> names = new ArrayList<>(headers.length);
    for (String h : headers) {
      names.add(RequestKeys.headerName(h));
    }
    this.deadlineHeaders = List.copyOf(names);
    return self();
  }

  /** The {@code Retry-After} a refused request gets, rounded up to whole seconds (default 1 s). */
  public B retryAfter(Duration retryAfter) {
    Objects.requireNonNull(retryAfter, "retryAfter");
    if (retryAfter.isNegative() || retryAfter.isZero()
        || retryAfter.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("retryAfter must be between 1 ms and 1 day but was "
          + retryAfter);
    }
    this.retryAfterSeconds = (retryAfter.toMillis() + 999) / 1000;
    return self();
  }

  /* The settings, checked (for Sluice's filter modules, through RuleAccess). */
  private ConcurrencyRuleSettings<Q, K> settings() {
    if (limiter == null) {
      throw new IllegalStateException("concurrency rule " + pattern + " needs a limiter");
    }
    if (scope == null) {
      throw new IllegalStateException("concurrency rule " + pattern + " needs a scope:"
          + " perClient(key), perRoute() or global()");
    }
    return new ConcurrencyRuleSettings<>(pattern, methods, limiter, scope, clientKey, flow,
        priority, maxWait, deadlineHeaders, retryAfterSeconds,
        limitName == null ? pattern : limitName);
  }
}

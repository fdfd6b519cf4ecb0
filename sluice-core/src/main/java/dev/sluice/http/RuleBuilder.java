package dev.sluice.http;

import dev.sluice.RateLimiter;
import dev.sluice.internal.RuleAccess;
import dev.sluice.internal.RuleChecks;
import dev.sluice.internal.RuleSettings;
import java.util.Objects;
import java.util.Set;
import java.util.function.ToDoubleFunction;

/**
 * What the HTTP filters' rule builders share (the servlet filter's {@code Rule.Builder}, the
 * WebFlux filter's {@code WebRule.Builder}): the methods a rule applies to, the limiter its
 * requests are held to, their key and cost, and queue mode.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 *
 * @param <Q> the request type the cost function reads
 * @param <K> the key resolver type of the filter
 * @param <B> the builder itself
 */
public abstract class RuleBuilder<Q, K, B extends RuleBuilder<Q, K, B>> {
  static {
    RuleAccess.installRules(RuleBuilder::settings);
  }

  private final String pattern;
  private Set<String> methods = Set.of();
  private RateLimiter limiter;
  private K key;
  private ToDoubleFunction<Q> cost = request -> 1;
  private boolean queue;

  /**
   * A builder for requests whose path matches {@code pattern}.
   *
   * @throws IllegalArgumentException if the pattern does not start with {@code /}
   */
  protected RuleBuilder(String pattern, K defaultKey) {
    if (pattern == null || !pattern.startsWith("/")) {
      throw new IllegalArgumentException("a path pattern starts with '/' but was "
          + (pattern == null ? "null" : "'" + pattern + "'"));
    }
    this.pattern = pattern;
    this.key = defaultKey;
  }

  /** This builder. */
  protected abstract B self();

  /**
   * HTTP methods this rule applies to, in any case (default: all).
   *
   * @throws IllegalArgumentException naming one that is not an HTTP method (a misspelt method
   *     would never match, and the rule would silently limit nothing)
   */
  public B methods(String... methods) {
    this.methods = RuleChecks.methods(methods);
    return self();
  }

  /** The limiter (with one or several limits) these requests are held to. */
  public B limiter(RateLimiter limiter) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    return self();
  }

  /** The key (default: the client IP, no proxy trusted). */
  public B key(K key) {
    this.key = Objects.requireNonNull(key, "key");
    return self();
  }

  /** A request's cost (default 1), e.g. the number of rows a batch request inserts. */
  public B cost(ToDoubleFunction<Q> cost) {
    this.cost = Objects.requireNonNull(cost, "cost");
    return self();
  }

  /**
   * Queue mode: a request that fits is held for its delay, so that requests reach the
   * application at the leak rate; the delay is bounded by the bucket (capacity / rate), beyond
   * which requests are rejected. Bucket limits only. The servlet filter holds the request on its
   * thread; the WebFlux filter on a timer, with no thread.
   */
  public B queue() {
    this.queue = true;
    return self();
  }

  /*
   * The settings, checked (for Sluice's filter modules, through RuleAccess): a limiter is set, and
   * queue mode has bucket limits.
   */
  private RuleSettings<Q, K> settings() {
    Objects.requireNonNull(limiter, "rule for " + pattern + " needs a limiter");
    if (queue) {
      RuleChecks.checkQueueable(limiter.limits(), pattern);
    }
    return new RuleSettings<>(pattern, methods, limiter, key, cost, queue);
  }
}

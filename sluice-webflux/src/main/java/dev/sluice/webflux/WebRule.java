package dev.sluice.webflux;

import dev.sluice.RateLimiter;
import dev.sluice.http.RuleSupport;
import java.util.Objects;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;

/**
 * Which requests (methods, a path pattern) are held to which limiter, under which key, at which
 * cost, as a meter (reject at once) or a queue (hold the request, on no thread, for its delay).
 *
 * <pre>{@code
 * WebRule.path("/api/**").methods("POST").limiter(limiter).key(WebKeys.header("X-Api-Key"))
 *     .cost(req -> Double.parseDouble(req.getHeaders().getFirst("X-Rows"))).build();
 * }</pre>
 *
 * Path patterns are Spring's {@link PathPattern}s, matched against the path within the
 * application, the way WebFlux's own handler mappings match it: {@code *} is any run of
 * characters within one segment, {@code /api/**} matches {@code /api} and everything under it,
 * {@code {id}} captures a segment.
 */
public final class WebRule {
  private final String pattern;
  private final PathPattern path;
  private final Set<String> methods;
  private final RateLimiter limiter;
  private final WebKeyResolver key;
  private final ToDoubleFunction<ServerHttpRequest> cost;
  private final boolean queue;

  private WebRule(Builder b) {
    this.pattern = b.pattern;
    this.path = b.path;
    this.methods = b.methods;
    this.limiter = Objects.requireNonNull(b.limiter, "rule for " + b.pattern + " needs a limiter");
    this.key = b.key;
    this.cost = b.cost;
    this.queue = b.queue;
    if (queue) {
      RuleSupport.checkQueueable(limiter.limits(), b.pattern);
    }
  }

  /** A rule for requests whose path matches {@code pattern} (starting with {@code /}). */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, PathContainer path) {
    return (methods.isEmpty() || methods.contains(method)) && this.path.matches(path);
  }

  RateLimiter limiter() {
    return limiter;
  }

  WebKeyResolver key() {
    return key;
  }

  ToDoubleFunction<ServerHttpRequest> cost() {
    return cost;
  }

  boolean queue() {
    return queue;
  }

  @Override
  public String toString() {
    return (methods.isEmpty() ? "*" : String.join(",", methods)) + " " + pattern;
  }

  /** Settings of a {@link WebRule}. */
  public static final class Builder {
    private final String pattern;
    private final PathPattern path;
    private Set<String> methods = Set.of();
    private RateLimiter limiter;
    private WebKeyResolver key = WebKeys.clientIp();
    private ToDoubleFunction<ServerHttpRequest> cost = r -> 1;
    private boolean queue;

    private Builder(String pattern) {
      if (pattern == null || !pattern.startsWith("/")) {
        throw new IllegalArgumentException("a path pattern starts with '/' but was "
            + (pattern == null ? "null" : "'" + pattern + "'"));
      }
      this.pattern = pattern;
      try {
        this.path = PathPatternParser.defaultInstance.parse(pattern);
      } catch (PatternParseException e) {
        throw new IllegalArgumentException("not a path pattern: '" + pattern + "': "
            + e.getMessage(), e);
      }
    }

    /** HTTP methods this rule applies to (default: all). */
    public Builder methods(String... methods) {
      this.methods = RuleSupport.methods(methods);
      return this;
    }

    /** The limiter (with one or several limits) these requests are held to. */
    public Builder limiter(RateLimiter limiter) {
      this.limiter = Objects.requireNonNull(limiter, "limiter");
      return this;
    }

    /** The key (default: the client IP, no proxy trusted). */
    public Builder key(WebKeyResolver key) {
      this.key = Objects.requireNonNull(key, "key");
      return this;
    }

    /** A request's cost (default 1), e.g. the number of rows a batch request inserts. */
    public Builder cost(ToDoubleFunction<ServerHttpRequest> cost) {
      this.cost = Objects.requireNonNull(cost, "cost");
      return this;
    }

    /**
     * Queue mode ({@link RateLimiter#reserveAsync}): a request that fits the queue is held for
     * its delay, on a timer and no thread, so that requests reach the application at exactly the
     * leak rate; the delay is bounded by the bucket (capacity / rate), beyond which requests are
     * rejected. Bucket limits only. The servlet filter's queue, without holding a thread.
     */
    public Builder queue() {
      this.queue = true;
      return this;
    }

    public WebRule build() {
      return new WebRule(this);
    }
  }
}

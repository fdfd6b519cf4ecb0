package dev.sluice.servlet;

import dev.sluice.RateLimiter;
import dev.sluice.http.RuleSupport;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Objects;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import java.util.regex.Pattern;

/**
 * Which requests (methods, a path pattern) are held to which limiter, under which key, at which
 * cost, as a meter (reject at once) or a queue (hold the request for its delay).
 *
 * <pre>{@code
 * Rule.path("/api/**").methods("POST").limiter(limiter).key(Keys.header("X-Api-Key"))
 *     .cost(req -> Double.parseDouble(req.getHeader("X-Rows"))).build();
 * }</pre>
 *
 * Path patterns: {@code *} is any run of characters within one segment, {@code **} any run
 * across segments ({@code /api/**} matches {@code /api} and everything under it); the path is the
 * one the container resolved (servlet path + path info: decoded, dot segments and duplicate
 * slashes resolved), so an encoded or disguised URI cannot step around a rule.
 */
public final class Rule {
  private final String pattern;
  private final Pattern regex;
  private final Set<String> methods;
  private final RateLimiter limiter;
  private final KeyResolver key;
  private final ToDoubleFunction<HttpServletRequest> cost;
  private final boolean queue;

  private Rule(Builder b) {
    this.pattern = b.pattern;
    this.regex = b.regex;
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

  boolean matches(String method, String path) {
    return (methods.isEmpty() || methods.contains(method)) && regex.matcher(path).matches();
  }

  RateLimiter limiter() {
    return limiter;
  }

  KeyResolver key() {
    return key;
  }

  ToDoubleFunction<HttpServletRequest> cost() {
    return cost;
  }

  boolean queue() {
    return queue;
  }

  @Override
  public String toString() {
    return (methods.isEmpty() ? "*" : String.join(",", methods)) + " " + pattern;
  }

  static Pattern compile(String pattern) {
    StringBuilder b = new StringBuilder();
    int i = 0;
    while (i < pattern.length()) {
      if (pattern.startsWith("/**", i) && i + 3 == pattern.length()) {
        b.append("(/.*)?");
        i += 3;
      } else if (pattern.startsWith("**", i)) {
        b.append(".*");
        i += 2;
      } else if (pattern.charAt(i) == '*') {
        b.append("[^/]*");
        i++;
      } else {
        int j = i;
        while (j < pattern.length() && pattern.charAt(j) != '*'
            && !(pattern.startsWith("/**", j) && j + 3 == pattern.length())) {
          j++;
        }
        b.append(Pattern.quote(pattern.substring(i, j)));
        i = j;
      }
    }
    return Pattern.compile(b.toString());
  }

  /** Settings of a {@link Rule}. */
  public static final class Builder {
    private final String pattern;
    private final Pattern regex;
    private Set<String> methods = Set.of();
    private RateLimiter limiter;
    private KeyResolver key = Keys.clientIp();
    private ToDoubleFunction<HttpServletRequest> cost = r -> 1;
    private boolean queue;

    private Builder(String pattern) {
      if (pattern == null || !pattern.startsWith("/")) {
        throw new IllegalArgumentException("a path pattern starts with '/' but was "
            + (pattern == null ? "null" : "'" + pattern + "'"));
      }
      this.pattern = pattern;
      this.regex = compile(pattern);
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
    public Builder key(KeyResolver key) {
      this.key = Objects.requireNonNull(key, "key");
      return this;
    }

    /** A request's cost (default 1), e.g. the number of rows a batch request inserts. */
    public Builder cost(ToDoubleFunction<HttpServletRequest> cost) {
      this.cost = Objects.requireNonNull(cost, "cost");
      return this;
    }

    /**
     * Queue mode: a request that fits is held for its delay, so that requests reach the
     * application at the leak rate; the delay is bounded by the bucket (capacity / rate), beyond
     * which requests are rejected. Bucket limits only. A held request keeps its thread.
     */
    public Builder queue() {
      this.queue = true;
      return this;
    }

    public Rule build() {
      return new Rule(this);
    }
  }
}

package dev.sluice.servlet;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import dev.sluice.http.ConcurrencyScope;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Which requests (methods, a path pattern, as {@link Rule}'s) count against which
 * {@link ConcurrencyLimiter}, under which key: each client apart ({@link #perClient}: a refusal
 * is {@code 429}), the route as one ({@link #perRoute}) or every request the rule matches as one
 * ({@link #global}: a refusal sheds load, {@code 503}).
 *
 * <pre>{@code
 * ConcurrencyRule.path("/api/**").limiter(backend).global()
 *     .priority(req -> req.getHeader("X-Batch") != null ? Priority.SHEDDABLE : Priority.NORMAL)
 *     .maxWait(Duration.ofMillis(50)).build();
 * }</pre>
 */
public final class ConcurrencyRule {
  private static final Set<String> METHODS = Set.of("GET", "HEAD", "POST", "PUT", "PATCH",
      "DELETE", "OPTIONS", "TRACE", "CONNECT");

  private final String pattern;
  private final Pattern regex;
  private final Set<String> methods;
  private final ConcurrencyLimiter limiter;
  private final ConcurrencyScope scope;
  private final KeyResolver clientKey;
  private final Function<HttpServletRequest, Priority> priority;
  private final Duration maxWait;
  private final long retryAfterSeconds;

  private ConcurrencyRule(Builder b) {
    this.pattern = b.pattern;
    this.regex = Rule.compile(b.pattern);
    this.methods = b.methods;
    this.limiter = b.limiter;
    this.scope = b.scope;
    this.clientKey = b.clientKey;
    this.priority = b.priority;
    this.maxWait = b.maxWait;
    this.retryAfterSeconds = b.retryAfterSeconds;
  }

  /** A rule for requests whose path matches {@code pattern} (starting with {@code /}). */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, String path) {
    return (methods.isEmpty() || methods.contains(method)) && regex.matcher(path).matches();
  }

  /** The key a request counts under; null when a per-client rule finds no client key. */
  String key(HttpServletRequest request) {
    switch (scope) {
      case CLIENT:
        return clientKey.key(request);
      case ROUTE:
        return "route:" + pattern;
      default:
        return "global";
    }
  }

  ConcurrencyLimiter limiter() {
    return limiter;
  }

  ConcurrencyScope scope() {
    return scope;
  }

  Priority priority(HttpServletRequest request) {
    Priority p = priority.apply(request);
    return p == null ? Priority.NORMAL : p;
  }

  Duration maxWait() {
    return maxWait;
  }

  long retryAfterSeconds() {
    return retryAfterSeconds;
  }

  @Override
  public String toString() {
    return "ConcurrencyRule[" + (methods.isEmpty() ? "" : String.join(",", methods) + " ")
        + pattern + ", " + scope + "]";
  }

  /** Settings of a {@link ConcurrencyRule}; {@link #limiter} and a scope are required. */
  public static final class Builder {
    private final String pattern;
    private Set<String> methods = Set.of();
    private ConcurrencyLimiter limiter;
    private ConcurrencyScope scope;
    private KeyResolver clientKey;
    private Function<HttpServletRequest, Priority> priority = req -> Priority.NORMAL;
    private Duration maxWait = Duration.ZERO;
    private long retryAfterSeconds = 1;

    private Builder(String pattern) {
      Objects.requireNonNull(pattern, "pattern");
      if (!pattern.startsWith("/")) {
        throw new IllegalArgumentException("a path pattern starts with '/' but was '" + pattern
            + "'");
      }
      this.pattern = pattern;
    }

    /** Only these methods (default every method). */
    public Builder methods(String... methods) {
      TreeSet<String> set = new TreeSet<>();
      for (String m : methods) {
        String upper = Objects.requireNonNull(m, "method").toUpperCase(Locale.ROOT);
        if (!METHODS.contains(upper)) {
          throw new IllegalArgumentException("not an HTTP method: '" + m + "' (one of "
              + new TreeSet<>(METHODS) + ")");
        }
        set.add(upper);
      }
      this.methods = Set.copyOf(set);
      return this;
    }

    /** The limiter the requests count against (its limit, store and shares). */
    public Builder limiter(ConcurrencyLimiter limiter) {
      this.limiter = Objects.requireNonNull(limiter, "limiter");
      return this;
    }

    /**
     * Each client's requests apart, under the key {@code key} resolves (a request without one
     * counts under {@code "shared:no-key"}); a refusal is {@code 429}.
     */
    public Builder perClient(KeyResolver key) {
      this.clientKey = Objects.requireNonNull(key, "key");
      this.scope = ConcurrencyScope.CLIENT;
      return this;
    }

    /** Every request of this rule's route as one key ({@code route:<pattern>}); a refusal is 503. */
    public Builder perRoute() {
      this.scope = ConcurrencyScope.ROUTE;
      return this;
    }

    /** Every request this rule matches as one key ({@code global}); a refusal is 503. */
    public Builder global() {
      this.scope = ConcurrencyScope.GLOBAL;
      return this;
    }

    /** Each request's priority (default {@link Priority#NORMAL}; null reads as NORMAL). */
    public Builder priority(Function<HttpServletRequest, Priority> priority) {
      this.priority = Objects.requireNonNull(priority, "priority");
      return this;
    }

    /**
     * How long a request may wait for a permit, holding its thread (default 0: refused at once
     * when none is free); at most 1 minute.
     */
    public Builder maxWait(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException("maxWait must be between 0 and 1 minute but was "
            + wait);
      }
      this.maxWait = wait;
      return this;
    }

    /** The {@code Retry-After} a refused request gets, in whole seconds (default 1, at least 1). */
    public Builder retryAfter(Duration retryAfter) {
      Objects.requireNonNull(retryAfter, "retryAfter");
      long seconds = (retryAfter.toMillis() + 999) / 1000;
      if (seconds < 1 || seconds > 86_400) {
        throw new IllegalArgumentException("retryAfter must be between 1 s and 1 day but was "
            + retryAfter);
      }
      this.retryAfterSeconds = seconds;
      return this;
    }

    /**
     * The rule.
     *
     * @throws IllegalStateException if the limiter or the scope is missing
     */
    public ConcurrencyRule build() {
      if (limiter == null) {
        throw new IllegalStateException("concurrency rule " + pattern + " needs a limiter");
      }
      if (scope == null) {
        throw new IllegalStateException("concurrency rule " + pattern + " needs a scope:"
            + " perClient(key), perRoute() or global()");
      }
      return new ConcurrencyRule(this);
    }
  }
}

package dev.sluice.webflux;

import dev.sluice.http.ConcurrencyRuleBuilder;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.internal.RuleAccess;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;
import reactor.core.publisher.Mono;

/**
 * The reactive twin of the servlet {@code ConcurrencyRule}: which requests (methods, a Spring
 * {@link PathPattern}, as {@link WebRule}'s) count against which
 * {@link dev.sluice.concurrency.ConcurrencyLimiter}, per client ({@code 429}), per route or
 * globally ({@code 503}, shedding). A request that waits for a permit holds no thread.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#in-http-filters">docs/concurrency.md, "In HTTP filters"</a>.
 */
public final class WebConcurrencyRule {
  private final ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings;
  private final PathPattern path;

  private WebConcurrencyRule(ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings,
      PathPattern path) {
    this.settings = settings;
    this.path = path;
  }

  /** A rule for requests whose path within the application matches {@code pattern}. */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, PathContainer requestPath) {
    return settings.appliesTo(method) && path.matches(requestPath);
  }

  /** The key a request counts under; empty when a per-client rule finds no client key. */
  /** The request's flow for fair queuing; empty when the rule names none or it finds none. */
  Mono<String> flow(ServerWebExchange exchange) {
    return settings.flow() == null ? Mono.empty() : settings.flow().key(exchange);
  }

  Mono<String> key(ServerWebExchange exchange) {
    return settings.scope() == ConcurrencyScope.CLIENT ? settings.clientKey().key(exchange)
        : Mono.just(settings.sharedKey());
  }

  ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings() {
    return settings;
  }

  @Override
  public String toString() {
    return "WebConcurrencyRule[" + settings + "]";
  }

  /** Settings of a {@link WebConcurrencyRule}: {@link ConcurrencyRuleBuilder}'s. */
  public static final class Builder
      extends ConcurrencyRuleBuilder<ServerHttpRequest, WebKeyResolver, Builder> {
    private final PathPattern path;

    private Builder(String pattern) {
      super(pattern);
      try {
        this.path = PathPatternParser.defaultInstance.parse(pattern);
      } catch (PatternParseException e) {
        throw new IllegalArgumentException("not a path pattern: '" + pattern + "': "
            + e.getMessage(), e);
      }
    }

    @Override
    protected Builder self() {
      return this;
    }

    /**
     * The rule.
     *
     * @throws IllegalStateException if the limiter or the scope is missing
     */
    public WebConcurrencyRule build() {
      return new WebConcurrencyRule(RuleAccess.settings(this), path);
    }
  }
}

package dev.sluice.webflux;

import dev.sluice.RateLimiter;
import dev.sluice.http.RuleBuilder;
import dev.sluice.internal.RuleAccess;
import dev.sluice.internal.RuleSettings;
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
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#webflux">docs/spring.md, "WebFlux"</a>.
 */
public final class WebRule {
  private final RuleSettings<ServerHttpRequest, WebKeyResolver> settings;
  private final PathPattern path;

  private WebRule(RuleSettings<ServerHttpRequest, WebKeyResolver> settings, PathPattern path) {
    this.settings = settings;
    this.path = path;
  }

  /** A rule for requests whose path matches {@code pattern} (starting with {@code /}). */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, PathContainer path) {
    return settings.appliesTo(method) && this.path.matches(path);
  }

  RuleSettings<ServerHttpRequest, WebKeyResolver> settings() {
    return settings;
  }

  @Override
  public String toString() {
    return settings.toString();
  }

  /**
   * Settings of a {@link WebRule}: {@link RuleBuilder}'s. In queue mode
   * ({@link RateLimiter#reserveAsync}) a held request waits on a timer and holds no thread.
   */
  public static final class Builder
      extends RuleBuilder<ServerHttpRequest, WebKeyResolver, Builder> {
    private final PathPattern path;

    private Builder(String pattern) {
      super(pattern, WebKeys.clientIp());
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

    public WebRule build() {
      return new WebRule(RuleAccess.settings(this), path);
    }
  }
}

package dev.sluice.servlet;

import dev.sluice.http.ConcurrencyRuleBuilder;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.internal.RuleAccess;
import jakarta.servlet.http.HttpServletRequest;
import java.util.regex.Pattern;

/**
 * Which requests (methods, a path pattern, as {@link Rule}'s) count against which
 * {@link dev.sluice.concurrency.ConcurrencyLimiter}, under which key: each client apart
 * ({@link Builder#perClient}: a refusal is {@code 429}), the route as one
 * ({@link Builder#perRoute}) or every request the rule matches as one ({@link Builder#global}: a
 * refusal sheds load, {@code 503}).
 *
 * <pre>{@code
 * ConcurrencyRule.path("/api/**").limiter(backend).global()
 *     .priority(req -> req.getHeader("X-Batch") != null ? Priority.SHEDDABLE : Priority.NORMAL)
 *     .maxWait(Duration.ofMillis(50)).build();
 * ConcurrencyRule.path("/reports/**").limiter(reports).global()
 *     .flow(Keys.header("X-Tenant"))   // waiters fair among tenants (fair queuing)
 *     .maxWait(Duration.ofMillis(500)).build();
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#in-http-filters">docs/concurrency.md, "In HTTP filters"</a>.
 */
public final class ConcurrencyRule {
  private final ConcurrencyRuleSettings<HttpServletRequest, KeyResolver> settings;
  private final Pattern regex;

  private ConcurrencyRule(ConcurrencyRuleSettings<HttpServletRequest, KeyResolver> settings) {
    this.settings = settings;
    this.regex = Rule.compile(settings.pattern());
  }

  /** A rule for requests whose path matches {@code pattern} (starting with {@code /}). */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, String path) {
    return settings.appliesTo(method) && regex.matcher(path).matches();
  }

  /** The key a request counts under; null when a per-client rule finds no client key. */
  String key(HttpServletRequest request) {
    return settings.scope() == ConcurrencyScope.CLIENT ? settings.clientKey().key(request)
        : settings.sharedKey();
  }

  /** The request's flow for fair queuing; null when the rule names none or it finds none. */
  String flow(HttpServletRequest request) {
    return settings.flow() == null ? null : settings.flow().key(request);
  }

  ConcurrencyRuleSettings<HttpServletRequest, KeyResolver> settings() {
    return settings;
  }

  @Override
  public String toString() {
    return "ConcurrencyRule[" + settings + "]";
  }

  /**
   * Settings of a {@link ConcurrencyRule}: {@link ConcurrencyRuleBuilder}'s. A request that
   * waits for a permit holds its thread.
   */
  public static final class Builder
      extends ConcurrencyRuleBuilder<HttpServletRequest, KeyResolver, Builder> {
    private Builder(String pattern) {
      super(pattern);
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
    public ConcurrencyRule build() {
      return new ConcurrencyRule(RuleAccess.settings(this));
    }
  }
}

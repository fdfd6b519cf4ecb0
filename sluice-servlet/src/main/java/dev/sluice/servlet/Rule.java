package dev.sluice.servlet;

import dev.sluice.http.RuleBuilder;
import dev.sluice.internal.RuleAccess;
import dev.sluice.internal.RuleSettings;
import jakarta.servlet.http.HttpServletRequest;
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
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 */
public final class Rule {
  private final RuleSettings<HttpServletRequest, KeyResolver> settings;
  private final Pattern regex;

  private Rule(RuleSettings<HttpServletRequest, KeyResolver> settings) {
    this.settings = settings;
    this.regex = compile(settings.pattern());
  }

  /** A rule for requests whose path matches {@code pattern} (starting with {@code /}). */
  public static Builder path(String pattern) {
    return new Builder(pattern);
  }

  boolean matches(String method, String path) {
    return settings.appliesTo(method) && regex.matcher(path).matches();
  }

  RuleSettings<HttpServletRequest, KeyResolver> settings() {
    return settings;
  }

  @Override
  public String toString() {
    return settings.toString();
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

  /**
   * Settings of a {@link Rule}: {@link RuleBuilder}'s. In queue mode a held request keeps its
   * thread for its delay.
   */
  public static final class Builder
      extends RuleBuilder<HttpServletRequest, KeyResolver, Builder> {
    private Builder(String pattern) {
      super(pattern, Keys.clientIp());
    }

    @Override
    protected Builder self() {
      return this;
    }

    public Rule build() {
      return new Rule(RuleAccess.settings(this));
    }
  }
}

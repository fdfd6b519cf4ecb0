package dev.sluice.servlet;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.http.FilterBuilder;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.FilterPolicy;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A Jakarta Servlet filter that holds requests to rate limits: the first {@link Rule} that
 * matches a request decides it; a request no rule matches passes. A rejected request gets
 * {@code 429 Too Many Requests} with {@code Retry-After} (whole seconds, rounded up, at least 1)
 * and an {@code application/problem+json} body; every limited response carries the
 * {@code RateLimit-Policy} and {@code RateLimit} fields (or the legacy {@code X-RateLimit-*}, or
 * none) and {@code Access-Control-Expose-Headers} for them. When the limiter's store is down and
 * its failure policy refuses without deciding (fail closed), the answer is {@code 503}; a refusal
 * by the local fallback limiter is a rate limit's, {@code 429}.
 *
 * <pre>{@code
 * SluiceFilter filter = SluiceFilter.builder()
 *     .rule(Rule.path("/api/**").limiter(limiter).key(Keys.clientIp(List.of("10.0.0.0/8"), 64)).build())
 *     .build();
 * servletContext.addFilter("sluice", filter).addMappingForUrlPatterns(null, false, "/*");
 * }</pre>
 */
public final class SluiceFilter implements Filter {
  private static final System.Logger LOG = System.getLogger(SluiceFilter.class.getName());

  /** Waits a queued request's delay; tests pass one driven by a manual clock. */
  @FunctionalInterface
  public interface Sleeper {
    void sleep(long nanos) throws InterruptedException;
  }

  private final List<Rule> rules;
  /** What a matched request gets, decided as the WebFlux filter decides it. */
  private final FilterPolicy policy;
  private final boolean combineHeaders;
  private final Sleeper sleeper;

  private SluiceFilter(List<Rule> rules, FilterPolicy policy, boolean combineHeaders,
      Sleeper sleeper) {
    this.rules = rules;
    this.policy = policy;
    this.combineHeaders = combineHeaders;
    this.sleeper = sleeper;
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)) {
      chain.doFilter(req, res);
      return;
    }
    // The path as the container decoded and normalized it to pick the servlet (not the raw URI,
    // which "/api/./x", "//api/x" or "/%61pi/x" would disguise)
    String path = request.getServletPath()
        + (request.getPathInfo() == null ? "" : request.getPathInfo());
    Rule rule = null;
    for (Rule r : rules) {
      if (r.matches(request.getMethod(), path)) {
        rule = r;
        break;
      }
    }
    if (rule == null) {
      chain.doFilter(req, res);
      return;
    }
    String method = request.getMethod();
    String key = rule.settings().key().key(request);
    if (key == null) {
      FilterPolicy.Outcome o = policy.withoutKey(method, path, rule);
      if (o.passes()) {
        chain.doFilter(req, res);
        return;
      }
      if (o.problem() != null) {
        writeProblem(response, o.problem());
        return;
      }
      key = o.key();
    }
    double cost;
    try {
      cost = rule.settings().cost().applyAsDouble(request);
    } catch (RuntimeException e) {
      writeProblem(response, policy.costFailed(e));
      return;
    }
    Decision d;
    try {
      RateLimiter limiter = rule.settings().limiter();
      d = rule.settings().queue() ? limiter.reserve(key, cost) : limiter.tryAcquire(key, cost);
    } catch (IllegalArgumentException e) {
      writeProblem(response, policy.invalidInput(e));
      return;
    }
    FilterPolicy.Outcome o = policy.decided(d, cost, method, path, key, response::setHeader);
    if (o.problem() != null) {
      writeProblem(response, o.problem());
      return;
    }
    if (o.delayNanos() > 0) {
      try {
        sleeper.sleep(o.delayNanos());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        writeProblem(response, new RateLimitProblem(503, "Interrupted", "the server stopped"
            + " while the request was queued"));
        return;
      }
    }
    chain.doFilter(req, combineHeaders ? new CombiningResponse(response) : res);
  }

  /**
   * Answers with {@code problem}: its status and its {@code application/problem+json} document
   * (the header fields are the caller's, {@link RateLimitProblem#writeHeaders}). The Spring Boot
   * starter answers a refused {@code @RateLimited} call with it, as this filter answers a request.
   */
  public static void writeProblem(HttpServletResponse response, RateLimitProblem problem)
      throws IOException {
    byte[] bytes = problem.body();
    response.setStatus(problem.status());
    response.setContentType(RateLimitProblem.MEDIA_TYPE);
    response.setCharacterEncoding("UTF-8");
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }

  /** Requests answered 429 since start. */
  public long rejectedRequests() {
    return policy.rejectedRequests();
  }

  /** Requests a dry run would have rejected (dry-run mode only). */
  public long dryRunRejections() {
    return policy.dryRunRejections();
  }

  /** Requests answered 503 because the store was down and its policy refuses. */
  public long unavailableResponses() {
    return policy.unavailableResponses();
  }

  /**
   * The response as the rest of the chain sees it when headers are combined: a
   * {@code RateLimit-Policy} or {@code RateLimit} field that the application (a proxy copying a
   * downstream service's answer) sets or adds is appended to this filter's as members of one
   * list, on one line.
   */
  static final class CombiningResponse extends HttpServletResponseWrapper {
    CombiningResponse(HttpServletResponse response) {
      super(response);
    }

    private static boolean listField(String name) {
      return "RateLimit".equalsIgnoreCase(name) || "RateLimit-Policy".equalsIgnoreCase(name);
    }

    @Override
    public void setHeader(String name, String value) {
      String mine = listField(name) ? getHeader(name) : null;
      super.setHeader(name, mine == null || value == null ? value : mine + ", " + value);
    }

    @Override
    public void addHeader(String name, String value) {
      if (listField(name) && getHeader(name) != null && value != null) {
        super.setHeader(name, getHeader(name) + ", " + value);
      } else {
        super.addHeader(name, value);
      }
    }
  }

  /** Settings of a {@link SluiceFilter}: {@link FilterBuilder}'s, and how a queued request waits. */
  public static final class Builder extends FilterBuilder<Rule, Builder> {
    private Sleeper sleeper = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);

    private Builder() {}

    @Override
    protected Builder self() {
      return this;
    }

    /** How a queued request waits (default {@code TimeUnit.NANOSECONDS.sleep}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    public SluiceFilter build() {
      return new SluiceFilter(rules("SluiceFilter"),
          new FilterPolicy(headers(), missingKey(), isDryRun(), LOG), isCombineHeaders(), sleeper);
    }
  }
}

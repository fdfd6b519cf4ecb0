package dev.sluice.servlet;

import dev.sluice.Decision;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitHeaders;
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
import java.util.ArrayList;
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

  private SluiceFilter(Builder b) {
    this.rules = List.copyOf(b.rules);
    this.policy = new FilterPolicy(b.headers, b.missingKey, b.dryRun, LOG);
    this.combineHeaders = b.combineHeaders;
    this.sleeper = b.sleeper;
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
    String key = rule.key().key(request);
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
      cost = rule.cost().applyAsDouble(request);
    } catch (RuntimeException e) {
      writeProblem(response, policy.costFailed(e));
      return;
    }
    Decision d;
    try {
      d = rule.queue() ? rule.limiter().reserve(key, cost) : rule.limiter().tryAcquire(key, cost);
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

  /** Settings of a {@link SluiceFilter}. */
  public static final class Builder {
    private final List<Rule> rules = new ArrayList<>();
    private RateLimitHeaders.Mode headers = RateLimitHeaders.Mode.IETF;
    private MissingKey missingKey = MissingKey.REJECT;
    private boolean dryRun;
    private boolean combineHeaders;
    private Sleeper sleeper = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);

    private Builder() {}

    /** Adds a rule; the first rule that matches a request decides it. */
    public Builder rule(Rule rule) {
      rules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /** Which rate-limit fields to send (default the IETF draft's). */
    public Builder headers(RateLimitHeaders.Mode mode) {
      this.headers = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /** What a request without a key gets (default {@link MissingKey#REJECT}). */
    public Builder onMissingKey(MissingKey rule) {
      this.missingKey = Objects.requireNonNull(rule, "rule");
      return this;
    }

    /** Shadow mode: decide, count and log, but never reject or add headers. */
    public Builder dryRun(boolean on) {
      this.dryRun = on;
      return this;
    }

    /**
     * Whether {@code RateLimit-Policy} and {@code RateLimit} fields the application adds after
     * this filter (a gateway copying a downstream service's) join this filter's as one list on one
     * line, instead of a second line (default false: HTTP reads two lines of a list field as one
     * list anyway, but some clients read only the first).
     */
    public Builder combineHeaders(boolean on) {
      this.combineHeaders = on;
      return this;
    }

    /** How a queued request waits (default {@code TimeUnit.NANOSECONDS.sleep}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    public SluiceFilter build() {
      if (rules.isEmpty()) {
        throw new IllegalArgumentException("a SluiceFilter needs at least one rule");
      }
      return new SluiceFilter(this);
    }
  }
}

package dev.sluice.servlet;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.FilterBuilder;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.ConcurrencyAnswers;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.internal.FilterPolicy;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * A Jakarta Servlet filter that holds requests to rate limits and caps the requests in flight,
 * with two kinds of rule.
 *
 * <p><b>Rate limits</b> ({@link Rule}): the first rule that matches a request decides it; a
 * request no rule matches passes. A rejected request gets {@code 429 Too Many Requests} with
 * {@code Retry-After} (whole seconds, rounded up, at least 1) and an {@code
 * application/problem+json} body; every limited response carries the {@code RateLimit-Policy}
 * and {@code RateLimit} fields (or the legacy {@code X-RateLimit-*}, or none) and {@code
 * Access-Control-Expose-Headers} for them. When the limiter's store is down and its failure
 * policy refuses without deciding (fail closed), the answer is {@code 503}; a refusal by the
 * local fallback limiter is a rate limit's, {@code 429}.
 *
 * <p><b>Concurrency limits</b> ({@link ConcurrencyRule}), after the rate limits (a request they
 * refuse never takes a permit, and a queued one holds none while it waits): every rule that
 * matches a request must give it a permit (a per-client cap and a global shedder together, say),
 * or it is refused with {@link ConcurrencyAnswers}' answer ({@code 429} for a per-client rule,
 * {@code 503} for shedding, {@code Retry-After}, {@code application/problem+json}) and the permits
 * it got are given back. A request that passes holds its permits until it ends: when the chain
 * returns, or, for a request put in asynchronous mode, when it completes, fails or times out.
 * Each permit ends once, with the outcome {@link ConcurrencyAnswers#outcome} reads from the
 * response (what adaptive limits learn from). Only a request's first dispatch takes permits.
 *
 * <pre>{@code
 * SluiceFilter filter = SluiceFilter.builder()
 *     .rule(Rule.path("/api/**").limiter(limiter).key(Keys.clientIp(List.of("10.0.0.0/8"), 64)).build())
 *     .rule(ConcurrencyRule.path("/api/**").limiter(perClient).perClient(Keys.clientIp()).build())
 *     .rule(ConcurrencyRule.path("/**").limiter(backend).global().build())
 *     .build();
 * servletContext.addFilter("sluice", filter).addMappingForUrlPatterns(null, false, "/*");
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 */
public final class SluiceFilter implements Filter {
  private static final System.Logger LOG = System.getLogger(SluiceFilter.class.getName());

  /** Waits a queued request's delay; tests pass one driven by a manual clock. */
  @FunctionalInterface
  public interface Sleeper {
    void sleep(long nanos) throws InterruptedException;
  }

  /** The request attribute holding the permits of a request in flight (a re-dispatch skips). */
  static final String HELD = SluiceFilter.class.getName() + ".held";

  private final List<Rule> rules;
  private final List<ConcurrencyRule> concurrencyRules;
  /** What a matched request gets, decided as the WebFlux filter decides it. */
  private final FilterPolicy policy;
  private final MissingKey missingKey;
  private final boolean combineHeaders;
  private final Sleeper sleeper;
  private final AtomicLong concurrencyRefusals = new AtomicLong();
  /** The health shedder, or null; and the priority of a request for it. */
  private final HealthShedder health;
  private final Function<HttpServletRequest, Priority> priority;
  private final AtomicLong healthRefusals = new AtomicLong();

  private SluiceFilter(List<Rule> rules, List<ConcurrencyRule> concurrencyRules,
      FilterPolicy policy, MissingKey missingKey, boolean combineHeaders, Sleeper sleeper,
      HealthShedder health, Function<HttpServletRequest, Priority> priority) {
    this.rules = rules;
    this.concurrencyRules = concurrencyRules;
    this.policy = policy;
    this.missingKey = missingKey;
    this.combineHeaders = combineHeaders;
    this.sleeper = sleeper;
    this.health = health;
    this.priority = priority;
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
    ServletResponse out = rules.isEmpty() ? res : rateLimited(request, response, path);
    if (out == null) {
      return;   // answered
    }
    if ((concurrencyRules.isEmpty() && health == null)
        || request.getDispatcherType() != DispatcherType.REQUEST
        || request.getAttribute(HELD) != null) {
      chain.doFilter(req, out);   // an async or error dispatch of a request already counted
      return;
    }
    HealthShedder.Verdict verdict = null;
    if (health != null) {
      verdict = health.admit(FilterPolicy.priorityOf(priority, request));
      if (!verdict.admitted()) {
        healthRefusals.incrementAndGet();
        response.setHeader("Retry-After", "1");
        writeProblem(response, FilterPolicy.shed(verdict));
        return;
      }
    }
    List<Permit> held = concurrencyRules.isEmpty() ? List.of() : permits(request, response, path);
    if (held == null) {
      if (verdict != null) {
        verdict.end();
      }
      return;   // refused
    }
    if (held.isEmpty() && verdict == null) {
      chain.doFilter(req, out);
      return;
    }
    Held ending = new Held(held, verdict);
    request.setAttribute(HELD, ending);
    boolean failed = true;
    try {
      chain.doFilter(req, out);
      failed = false;
    } finally {
      if (!failed && request.isAsyncStarted()) {
        request.getAsyncContext().addListener(new Releaser(ending, response));
      } else {
        ending.end(ConcurrencyAnswers.outcome(response.getStatus(), failed));
      }
    }
  }

  /** What a request in flight holds: its permits, and the health shedder's admission. */
  private static final class Held {
    private final List<Permit> permits;
    private final HealthShedder.Verdict verdict;
    private final AtomicBoolean done = new AtomicBoolean();

    Held(List<Permit> permits, HealthShedder.Verdict verdict) {
      this.permits = permits;
      this.verdict = verdict;
    }

    /** Ends it all, once. */
    void end(Outcome outcome) {
      if (done.compareAndSet(false, true)) {
        release(permits, outcome);
        if (verdict != null) {
          verdict.end();
        }
      }
    }
  }

  /**
   * The rate rules' part: the response to go on with (the given one, or a wrapper that combines
   * header fields), or null when the request was answered here.
   */
  private ServletResponse rateLimited(HttpServletRequest request, HttpServletResponse response,
      String path) throws IOException {
    Rule rule = null;
    for (Rule r : rules) {
      if (r.matches(request.getMethod(), path)) {
        rule = r;
        break;
      }
    }
    if (rule == null) {
      return response;
    }
    String method = request.getMethod();
    String key = rule.settings().key().key(request);
    if (key == null) {
      FilterPolicy.Outcome o = policy.withoutKey(method, path, rule);
      if (o.passes()) {
        return response;
      }
      if (o.problem() != null) {
        writeProblem(response, o.problem());
        return null;
      }
      key = o.key();
    }
    double cost;
    try {
      cost = rule.settings().cost().applyAsDouble(request);
    } catch (RuntimeException e) {
      writeProblem(response, policy.costFailed(e));
      return null;
    }
    Decision d;
    try {
      RateLimiter limiter = rule.settings().limiter();
      d = rule.settings().queue() ? limiter.reserve(key, cost) : limiter.tryAcquire(key, cost);
    } catch (IllegalArgumentException e) {
      writeProblem(response, policy.invalidInput(e));
      return null;
    }
    FilterPolicy.Outcome o = policy.decided(d, cost, method, path, key, response::setHeader);
    if (o.problem() != null) {
      writeProblem(response, o.problem());
      return null;
    }
    if (o.delayNanos() > 0) {
      try {
        sleeper.sleep(o.delayNanos());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        writeProblem(response, new RateLimitProblem(503, "Interrupted", "the server stopped"
            + " while the request was queued"));
        return null;
      }
    }
    return combineHeaders ? new CombiningResponse(response) : response;
  }

  /**
   * The concurrency rules' part: the permits of every rule that matches, or null when one
   * refused (the request was answered and the permits taken so far given back).
   */
  private List<Permit> permits(HttpServletRequest request, HttpServletResponse response,
      String path) throws IOException {
    String method = request.getMethod();
    List<Permit> held = new ArrayList<>(2);
    for (ConcurrencyRule rule : concurrencyRules) {
      if (!rule.matches(method, path)) {
        continue;
      }
      ConcurrencyRuleSettings<HttpServletRequest, KeyResolver> settings = rule.settings();
      String key = rule.key(request);
      if (key == null) {   // a per-client rule and a request without the client's key
        if (missingKey == MissingKey.ALLOW) {
          continue;
        }
        if (missingKey == MissingKey.REJECT) {
          release(held, Outcome.IGNORED);
          writeProblem(response, settings.missingKey());
          return null;
        }
        key = FilterPolicy.SHARED_KEY;
      }
      Acquisition a;
      try {
        Duration wait = settings.waitFor(key, request::getHeader);
        a = wait.isZero()
            ? settings.limiter().tryAcquire(key, 1, settings.priorityOf(request))
            : settings.limiter().acquire(key, rule.flow(request), 1,
                settings.priorityOf(request), wait);
      } catch (IllegalArgumentException e) {
        release(held, Outcome.IGNORED);
        writeProblem(response, new RateLimitProblem(400, "Bad Request",
            "the request cannot be limited: " + e.getMessage()));
        return null;
      }
      if (!a.isAcquired()) {
        release(held, Outcome.IGNORED);
        concurrencyRefusals.incrementAndGet();
        response.setHeader("Retry-After", Long.toString(settings.retryAfterSeconds()));
        writeProblem(response, ConcurrencyAnswers.problem(a, settings.scope(),
            settings.limitName()));
        return null;
      }
      held.add(a.permit());
    }
    return held;
  }

  private static void release(List<Permit> held, Outcome outcome) {
    for (Permit p : held) {
      p.release(outcome);
    }
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

  /** Requests a concurrency rule refused (429 or 503) since start. */
  public long concurrencyRefusals() {
    return concurrencyRefusals.get();
  }

  /** Requests the health shedder refused (503) since start. */
  public long healthRefusals() {
    return healthRefusals.get();
  }

  /** Releases an asynchronous request's permits once, when it completes, fails or times out. */
  private static final class Releaser implements AsyncListener {
    private final Held held;
    private final HttpServletResponse response;

    Releaser(Held held, HttpServletResponse response) {
      this.held = held;
      this.response = response;
    }

    private void end(Outcome outcome) {
      held.end(outcome);
    }

    @Override
    public void onComplete(AsyncEvent event) {
      end(ConcurrencyAnswers.outcome(response.getStatus(), false));
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      end(Outcome.DROPPED);
    }

    @Override
    public void onError(AsyncEvent event) {
      end(Outcome.DROPPED);
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this);   // a new cycle: keep listening
    }
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

  /**
   * Settings of a {@link SluiceFilter}: {@link FilterBuilder}'s (its {@code onMissingKey} also
   * says what a per-client concurrency rule does with a request without the client's key:
   * {@code REJECT} answers 400 naming the limit, {@code ALLOW} lets it pass that rule, {@code
   * SHARED} counts every such request under one key, {@code shared:no-key}), the concurrency
   * rules, and how a queued request waits.
   */
  public static final class Builder extends FilterBuilder<Rule, Builder> {
    private final List<ConcurrencyRule> concurrencyRules = new ArrayList<>();
    private Sleeper sleeper = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);
    private HealthShedder health;
    private Function<HttpServletRequest, Priority> priority = r -> Priority.NORMAL;

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

    /**
     * Adds a concurrency rule; a request must get a permit from every concurrency rule that
     * matches it, after the rate rules let it through.
     */
    public Builder rule(ConcurrencyRule rule) {
      concurrencyRules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /**
     * Sheds requests by the backend's health ({@code docs/health.md}): after the rate rules and
     * before the concurrency rules, every request's first dispatch asks {@code shedder} at the
     * priority {@code priority} reads from it (null, or a function that throws: {@code
     * NORMAL}); a refusal is {@code 503} with {@code Retry-After: 1} and a problem document whose
     * detail names the signal, its value and its band. An admitted request's admission ends with
     * it, as its permits do.
     */
    public Builder health(HealthShedder shedder, Function<HttpServletRequest, Priority> priority) {
      this.health = Objects.requireNonNull(shedder, "shedder");
      this.priority = Objects.requireNonNull(priority, "priority");
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalArgumentException if it has no rule of either kind and no health shedder
     */
    public SluiceFilter build() {
      return new SluiceFilter(rules("SluiceFilter", concurrencyRules.size()
          + (health == null ? 0 : 1)),
          List.copyOf(concurrencyRules), new FilterPolicy(headers(), missingKey(), isDryRun(), LOG),
          missingKey(), isCombineHeaders(), sleeper, health, priority);
    }
  }
}

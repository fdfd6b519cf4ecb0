package dev.sluice.servlet;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.http.ConcurrencyAnswers;
import dev.sluice.http.ConcurrencyRuleSettings;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitProblem;
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
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A Jakarta Servlet filter that caps the requests in flight: every {@link ConcurrencyRule} that
 * matches a request must give it a permit (a per-client cap and a global shedder together, say),
 * or it is refused with {@link ConcurrencyAnswers}' answer ({@code 429} for a per-client rule,
 * {@code 503} for shedding, {@code Retry-After}, {@code application/problem+json}) and the permits
 * it got are given back. A request that passes holds its permits until it ends: when the chain
 * returns, or, for a request put in asynchronous mode, when it completes, fails or times out. Each
 * permit ends once, with the outcome {@link ConcurrencyAnswers#outcome} reads from the response
 * (what adaptive limits learn from).
 *
 * <pre>{@code
 * SluiceConcurrencyFilter filter = SluiceConcurrencyFilter.builder()
 *     .rule(ConcurrencyRule.path("/api/**").limiter(perClient).perClient(Keys.clientIp()).build())
 *     .rule(ConcurrencyRule.path("/**").limiter(backend).global().build())
 *     .build();
 * }</pre>
 */
public final class SluiceConcurrencyFilter implements Filter {
  /** The request attribute holding the permits of a request in flight (a re-dispatch skips). */
  static final String HELD = SluiceConcurrencyFilter.class.getName() + ".held";

  private final List<ConcurrencyRule> rules;
  private final MissingKey missingKey;
  private final AtomicLong refused = new AtomicLong();

  private SluiceConcurrencyFilter(List<ConcurrencyRule> rules, MissingKey missingKey) {
    this.rules = rules;
    this.missingKey = missingKey;
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)
        || request.getDispatcherType() != DispatcherType.REQUEST
        || request.getAttribute(HELD) != null) {
      chain.doFilter(req, res);   // an async or error dispatch of a request already counted
      return;
    }
    String path = request.getServletPath()
        + (request.getPathInfo() == null ? "" : request.getPathInfo());
    String method = request.getMethod();
    List<Permit> held = new ArrayList<>(2);
    for (ConcurrencyRule rule : rules) {
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
          SluiceFilter.writeProblem(response, settings.missingKey());
          return;
        }
        key = FilterPolicy.SHARED_KEY;
      }
      Acquisition a;
      try {
        Duration wait = settings.waitFor(key, request::getHeader);
        a = wait.isZero()
            ? settings.limiter().tryAcquire(key, 1, settings.priorityOf(request))
            : settings.limiter().acquire(key, 1, settings.priorityOf(request), wait);
      } catch (IllegalArgumentException e) {
        release(held, Outcome.IGNORED);
        SluiceFilter.writeProblem(response, new RateLimitProblem(400, "Bad Request",
            "the request cannot be limited: " + e.getMessage()));
        return;
      }
      if (!a.isAcquired()) {
        release(held, Outcome.IGNORED);
        refused.incrementAndGet();
        response.setHeader("Retry-After", Long.toString(settings.retryAfterSeconds()));
        SluiceFilter.writeProblem(response, ConcurrencyAnswers.problem(a, settings.scope(),
            settings.limitName()));
        return;
      }
      held.add(a.permit());
    }
    if (held.isEmpty()) {
      chain.doFilter(req, res);
      return;
    }
    request.setAttribute(HELD, held);
    boolean failed = true;
    try {
      chain.doFilter(req, res);
      failed = false;
    } finally {
      if (!failed && request.isAsyncStarted()) {
        request.getAsyncContext().addListener(new Releaser(held, response));
      } else {
        release(held, ConcurrencyAnswers.outcome(response.getStatus(), failed));
      }
    }
  }

  private static void release(List<Permit> held, Outcome outcome) {
    for (Permit p : held) {
      p.release(outcome);
    }
  }

  /** Requests refused since start. */
  public long refusedRequests() {
    return refused.get();
  }

  /** Releases an asynchronous request's permits once, when it completes, fails or times out. */
  private static final class Releaser implements AsyncListener {
    private final List<Permit> held;
    private final HttpServletResponse response;
    private final AtomicBoolean done = new AtomicBoolean();

    Releaser(List<Permit> held, HttpServletResponse response) {
      this.held = held;
      this.response = response;
    }

    private void end(Outcome outcome) {
      if (done.compareAndSet(false, true)) {
        release(held, outcome);
      }
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

  /** Settings of a {@link SluiceConcurrencyFilter}: its rules, applied in order. */
  public static final class Builder {
    private final List<ConcurrencyRule> rules = new ArrayList<>();
    private MissingKey missingKey = MissingKey.REJECT;

    private Builder() {}

    /**
     * What a per-client rule does with a request that has no client key (its header is missing):
     * {@code REJECT} answers 400 naming the limit (the default, as for rate limits), {@code ALLOW}
     * lets it pass that rule, {@code SHARED} counts every such request under one key,
     * {@code shared:no-key}.
     */
    public Builder missingKey(MissingKey missingKey) {
      this.missingKey = Objects.requireNonNull(missingKey, "missingKey");
      return this;
    }

    /** A rule; a request must get a permit from every rule that matches it. */
    public Builder rule(ConcurrencyRule rule) {
      rules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalStateException if there is no rule
     */
    public SluiceConcurrencyFilter build() {
      if (rules.isEmpty()) {
        throw new IllegalStateException("SluiceConcurrencyFilter needs at least one rule");
      }
      return new SluiceConcurrencyFilter(List.copyOf(rules), missingKey);
    }
  }
}

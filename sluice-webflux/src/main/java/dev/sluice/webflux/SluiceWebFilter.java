package dev.sluice.webflux;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.FilterBuilder;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.ConcurrencyAnswers;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.internal.FilterPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * The reactive twin of the servlet {@code SluiceFilter}: a Spring WebFlux {@link WebFilter} that
 * holds requests to rate limits and caps the requests in flight without ever blocking an
 * event-loop thread. It decides with
 * {@link dev.sluice.RateLimiter#tryAcquireAsync} (a meter) or
 * {@link dev.sluice.RateLimiter#reserveAsync} (a {@link WebRule.Builder#queue queue}, whose delay
 * is waited out on a timer), so a shared store's round trip, or a queued request's wait, holds no
 * thread.
 *
 * <p>The first {@link WebRule} that matches a request decides it; a request no rule matches
 * passes. A rejected request gets {@code 429 Too Many Requests} with {@code Retry-After} and an
 * {@code application/problem+json} body; every limited response carries the rate-limit fields
 * ({@link RateLimitHeaders}); when the store is down and its failure policy refuses without
 * deciding (fail closed), the answer is {@code 503} with {@code Retry-After: 1} (a refusal by the
 * local fallback limiter is a rate limit's, {@code 429}). The answers are the servlet filter's, word for word
 * ({@link RateLimitProblem}).
 *
 * <p>Concurrency limits ({@link WebConcurrencyRule}) come after the rate limits: every one that
 * matches a request must give it a permit (acquired with {@link
 * dev.sluice.concurrency.ConcurrencyLimiter#acquireAsync}, so a store's round trip or a wait
 * holds no thread), or it is refused as the servlet filter refuses ({@link ConcurrencyAnswers}:
 * {@code 429} per client, {@code 503} shedding, {@code Retry-After}, a problem document) and the
 * permits it got are given back. A request that passes holds its permits until its response
 * completes, fails or is cancelled (the client went away); each permit ends once, with the
 * outcome read from the response ({@code IGNORED} for a cancellation).
 *
 * <pre>{@code
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#webflux">docs/spring.md, "WebFlux"</a>.
 *
 * @Bean
 * WebFilter sluice(RateLimiter limiter, ConcurrencyLimiter backend) {
 *   return SluiceWebFilter.builder()
 *       .rule(WebRule.path("/api/**").limiter(limiter).key(WebKeys.header("X-Api-Key")).build())
 *       .rule(WebConcurrencyRule.path("/api/**").limiter(backend).global().build())
 *       .build();
 * }
 * }</pre>
 */
public final class SluiceWebFilter implements WebFilter {
  private static final System.Logger LOG = System.getLogger(SluiceWebFilter.class.getName());
  /** Stands for "this request has no key" (compared by identity). */
  private static final String NO_KEY = new String("no key");
  private static final MediaType PROBLEM = MediaType.parseMediaType(RateLimitProblem.MEDIA_TYPE);

  private final List<WebRule> rules;
  private final List<WebConcurrencyRule> concurrencyRules;
  /** What a matched request gets, decided as the servlet filter decides it. */
  private final FilterPolicy policy;
  private final MissingKey missingKey;
  private final Delayer delayer;
  private final AtomicLong concurrencyRefusals = new AtomicLong();

  /** Whether list fields added after this filter join its own on one line. */
  private final boolean combineHeaders;

  /** The health shedder, or null; and the priority of a request for it. */
  private final HealthShedder health;
  private final Function<ServerHttpRequest, Priority> priority;
  private final AtomicLong healthRefusals = new AtomicLong();

  private SluiceWebFilter(List<WebRule> rules, List<WebConcurrencyRule> concurrencyRules,
      FilterPolicy policy, MissingKey missingKey, boolean combineHeaders, Delayer delayer,
      HealthShedder health, Function<ServerHttpRequest, Priority> priority) {
    this.rules = rules;
    this.concurrencyRules = concurrencyRules;
    this.policy = policy;
    this.missingKey = missingKey;
    this.combineHeaders = combineHeaders;
    this.delayer = delayer;
    this.health = health;
    this.priority = priority;
  }

  /** Waits out a queued request's delay without a thread; tests pass one on a manual clock. */
  @FunctionalInterface
  public interface Delayer {
    /** Completes {@code nanos} from now. */
    Mono<?> delay(long nanos);
  }

  public static Builder builder() {
    return new Builder();
  }

  // ReferenceEquality: NO_KEY is a marker instance, never a key a request names
  @SuppressWarnings("ReferenceEquality")
  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    PathContainer path = request.getPath().pathWithinApplication();
    String method = request.getMethod().name();
    WebRule rule = null;
    for (WebRule r : rules) {
      if (r.matches(method, path)) {
        rule = r;
        break;
      }
    }
    if (rule == null) {
      return inFlight(exchange, chain);
    }
    WebRule matched = rule;
    return rule.settings().key().key(exchange).defaultIfEmpty(NO_KEY)
        .flatMap(key -> key == NO_KEY ? withoutKey(exchange, chain, matched)
            : limit(exchange, chain, matched, key));
  }

  private Mono<Void> withoutKey(ServerWebExchange exchange, WebFilterChain chain, WebRule rule) {
    ServerHttpRequest request = exchange.getRequest();
    FilterPolicy.Outcome o = policy.withoutKey(request.getMethod().name(),
        request.getPath().value(), rule);
    return o.passes() ? inFlight(exchange, chain)
        : o.problem() != null ? writeProblem(exchange.getResponse(), o.problem())
        : limit(exchange, chain, rule, o.key());
  }

  private Mono<Void> limit(ServerWebExchange exchange, WebFilterChain chain, WebRule rule,
      String key) {
    ServerHttpResponse response = exchange.getResponse();
    double cost;
    try {
      cost = rule.settings().cost().applyAsDouble(exchange.getRequest());
    } catch (RuntimeException e) {
      return writeProblem(response, policy.costFailed(e));
    }
    CompletableFuture<Decision> decided;
    try {
      RateLimiter limiter = rule.settings().limiter();
      decided = rule.settings().queue() ? limiter.reserveAsync(key, cost)
          : limiter.tryAcquireAsync(key, cost);
    } catch (IllegalArgumentException e) {
      return writeProblem(response, policy.invalidInput(e));
    }
    return Mono.fromFuture(decided)
        .flatMap(d -> respond(exchange, chain, d, cost, key))
        .onErrorResume(IllegalArgumentException.class,
            e -> writeProblem(response, policy.invalidInput(e)));
  }

  private Mono<Void> respond(ServerWebExchange exchange, WebFilterChain chain, Decision d,
      double cost, String key) {
    ServerHttpRequest request = exchange.getRequest();
    HttpHeaders h = exchange.getResponse().getHeaders();
    FilterPolicy.Outcome o = policy.decided(d, cost, request.getMethod().name(),
        request.getPath().value(), key, h::set);
    if (o.problem() != null) {
      return writeProblem(exchange.getResponse(), o.problem());
    }
    if (combineHeaders && d.isAllowed()) {
      String policyField = h.getFirst("RateLimit-Policy");
      String limit = h.getFirst("RateLimit");
      exchange.getResponse().beforeCommit(() -> {
        combine(exchange.getResponse().getHeaders(), "RateLimit-Policy", policyField);
        combine(exchange.getResponse().getHeaders(), "RateLimit", limit);
        return Mono.empty();
      });
    }
    return o.delayNanos() > 0
        ? delayer.delay(o.delayNanos()).then(Mono.defer(() -> inFlight(exchange, chain)))
        : inFlight(exchange, chain);
  }

  /**
   * The health shedder's part (a refusal answers 503), then the concurrency rules'; an admission
   * ends with the response, as permits do.
   */
  private Mono<Void> inFlight(ServerWebExchange exchange, WebFilterChain chain) {
    if (health == null) {
      return permits(exchange, chain);
    }
    HealthShedder.Verdict verdict =
        health.admit(FilterPolicy.priorityOf(priority, exchange.getRequest()));
    if (!verdict.admitted()) {
      healthRefusals.incrementAndGet();
      exchange.getResponse().getHeaders().set("Retry-After", "1");
      return writeProblem(exchange.getResponse(), new RateLimitProblem(503,
          "Service Unavailable", "shedding load: " + verdict.reason()));
    }
    return Mono.defer(() -> permits(exchange, chain)).doFinally(signal -> verdict.end());
  }

  /** The concurrency rules' part: permits of every rule that matches, then the chain. */
  private Mono<Void> permits(ServerWebExchange exchange, WebFilterChain chain) {
    if (concurrencyRules.isEmpty()) {
      return chain.filter(exchange);
    }
    ServerHttpRequest request = exchange.getRequest();
    PathContainer path = request.getPath().pathWithinApplication();
    String method = request.getMethod().name();
    List<WebConcurrencyRule> matched = new ArrayList<>(2);
    for (WebConcurrencyRule r : concurrencyRules) {
      if (r.matches(method, path)) {
        matched.add(r);
      }
    }
    if (matched.isEmpty()) {
      return chain.filter(exchange);
    }
    return acquire(exchange, chain, matched, 0, new ArrayList<>(matched.size()));
  }

  /** Acquires the permit of rule {@code i} and the rest, then runs the chain holding them. */
  // ReferenceEquality: NO_KEY is a marker instance, never a key a request names
  @SuppressWarnings("ReferenceEquality")
  private Mono<Void> acquire(ServerWebExchange exchange, WebFilterChain chain,
      List<WebConcurrencyRule> matched, int i, List<Permit> held) {
    if (i == matched.size()) {
      return chain.filter(exchange).doFinally(signal -> release(held, outcome(exchange, signal)));
    }
    WebConcurrencyRule rule = matched.get(i);
    ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings = rule.settings();
    return rule.key(exchange).defaultIfEmpty(NO_KEY)
        .flatMap(found -> {
          if (found == NO_KEY && missingKey == MissingKey.ALLOW) {
            return acquire(exchange, chain, matched, i + 1, held);   // this rule passes it
          }
          if (found == NO_KEY && missingKey == MissingKey.REJECT) {
            release(held, Outcome.IGNORED);
            return writeProblem(exchange.getResponse(), settings.missingKey());
          }
          String key = found == NO_KEY ? FilterPolicy.SHARED_KEY : found;
          return rule.flow(exchange).defaultIfEmpty(NO_KEY).flatMap(flow -> Mono.fromFuture(
              () -> settings.limiter().acquireAsync(key, flow == NO_KEY ? null : flow, 1,
                  settings.priorityOf(exchange.getRequest()),
                  settings.waitFor(key, exchange.getRequest().getHeaders()::getFirst))))
              .flatMap(a -> {
                if (!a.isAcquired()) {
                  release(held, Outcome.IGNORED);
                  return refuse(exchange, a, settings);
                }
                held.add(a.permit());
                return acquire(exchange, chain, matched, i + 1, held);
              });
        })
        .onErrorResume(IllegalArgumentException.class, e -> {
          release(held, Outcome.IGNORED);
          return writeProblem(exchange.getResponse(), new RateLimitProblem(400,
              "Bad Request", "the request cannot be limited: " + e.getMessage()));
        })
        // the client went away while a permit was asked for: what was taken goes back (a
        // permit granted to the cancelled future is ended by the limiter)
        .doOnCancel(() -> release(held, Outcome.IGNORED));
  }

  private Mono<Void> refuse(ServerWebExchange exchange, Acquisition a,
      ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings) {
    concurrencyRefusals.incrementAndGet();
    exchange.getResponse().getHeaders().set("Retry-After",
        Long.toString(settings.retryAfterSeconds()));
    return writeProblem(exchange.getResponse(),
        ConcurrencyAnswers.problem(a, settings.scope(), settings.limitName()));
  }

  private static Outcome outcome(ServerWebExchange exchange, SignalType signal) {
    if (signal == SignalType.CANCEL) {
      return Outcome.IGNORED;
    }
    HttpStatusCode status = exchange.getResponse().getStatusCode();
    return ConcurrencyAnswers.outcome(status == null ? 200 : status.value(),
        signal == SignalType.ON_ERROR);
  }

  /** Releases without blocking this thread (an event loop) on a shared store's answer. */
  // FutureReturnValueIgnored: a release is fire and forget: the permit's lease ends it if the release is lost
  @SuppressWarnings("FutureReturnValueIgnored")
  private static void release(List<Permit> held, Outcome outcome) {
    for (Permit p : held) {
      p.releaseAsync(outcome);
    }
  }

  /**
   * This filter's value of a list field and every line set or added after it (a handler's
   * {@code ResponseEntity} headers replace the filter's), as members of one list on one line.
   */
  static void combine(HttpHeaders h, String name, String mine) {
    List<String> lines = h.get(name);
    List<String> members = new ArrayList<>();
    if (mine != null) {
      members.add(mine);
    }
    if (lines != null) {
      for (String line : lines) {
        if (!line.equals(mine)) {
          members.add(line);
        }
      }
    }
    if (!members.isEmpty()) {
      h.set(name, String.join(", ", members));
    }
  }

  /**
   * Answers with {@code problem}: its status and its {@code application/problem+json} document
   * (the header fields are the caller's, {@link RateLimitProblem#writeHeaders}). The Spring Boot
   * starter answers a refused {@code @RateLimited} call with it, as this filter answers a request.
   */
  public static Mono<Void> writeProblem(ServerHttpResponse response, RateLimitProblem problem) {
    byte[] body = problem.body();
    response.setStatusCode(HttpStatus.valueOf(problem.status()));
    response.getHeaders().setContentType(PROBLEM);
    response.getHeaders().setContentLength(body.length);
    return response.writeWith(Mono.just(response.bufferFactory().wrap(body)));
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

  /**
   * Settings of a {@link SluiceWebFilter}: {@link FilterBuilder}'s (its {@code onMissingKey} also
   * says what a per-client concurrency rule does with a request without the client's key), the
   * concurrency rules, and how a queued request waits.
   */
  public static final class Builder extends FilterBuilder<WebRule, Builder> {
    private final List<WebConcurrencyRule> concurrencyRules = new ArrayList<>();
    private Delayer delayer = nanos -> Mono.delay(Duration.ofNanos(nanos));
    private HealthShedder health;
    private Function<ServerHttpRequest, Priority> priority = r -> Priority.NORMAL;

    private Builder() {}

    @Override
    protected Builder self() {
      return this;
    }

    /** How a queued request waits (default {@code Mono.delay} on Reactor's parallel timer). */
    public Builder delayer(Delayer delayer) {
      this.delayer = Objects.requireNonNull(delayer, "delayer");
      return this;
    }

    /**
     * Adds a concurrency rule; a request must get a permit from every concurrency rule that
     * matches it, after the rate rules let it through.
     */
    public Builder rule(WebConcurrencyRule rule) {
      concurrencyRules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /**
     * Sheds requests by the backend's health ({@code docs/health.md}): after the rate rules and
     * before the concurrency rules, every request asks {@code shedder} at the priority {@code
     * priority} reads from it (null, or a function that throws: {@code NORMAL}); a refusal is
     * {@code 503} with {@code Retry-After: 1} and a problem document whose detail names the
     * signal, its value and its band. An admission ends with the response, as permits do.
     */
    public Builder health(HealthShedder shedder, Function<ServerHttpRequest, Priority> priority) {
      this.health = Objects.requireNonNull(shedder, "shedder");
      this.priority = Objects.requireNonNull(priority, "priority");
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalArgumentException if it has no rule of either kind and no health shedder
     */
    public SluiceWebFilter build() {
      return new SluiceWebFilter(rules("SluiceWebFilter", concurrencyRules.size()
          + (health == null ? 0 : 1)),
          List.copyOf(concurrencyRules), new FilterPolicy(headers(), missingKey(), isDryRun(), LOG),
          missingKey(), isCombineHeaders(), delayer, health, priority);
    }
  }
}

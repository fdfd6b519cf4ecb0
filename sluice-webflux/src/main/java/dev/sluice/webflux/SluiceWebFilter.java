package dev.sluice.webflux;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.http.FilterBuilder;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.FilterPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The reactive twin of the servlet {@code SluiceFilter}: a Spring WebFlux {@link WebFilter} that
 * holds requests to rate limits without ever blocking an event-loop thread. It decides with
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
 * <pre>{@code
 * @Bean
 * WebFilter sluice(RateLimiter limiter) {
 *   return SluiceWebFilter.builder()
 *       .rule(WebRule.path("/api/**").limiter(limiter).key(WebKeys.header("X-Api-Key")).build())
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
  /** What a matched request gets, decided as the servlet filter decides it. */
  private final FilterPolicy policy;
  private final Delayer delayer;

  /** Whether list fields added after this filter join its own on one line. */
  private final boolean combineHeaders;

  private SluiceWebFilter(List<WebRule> rules, FilterPolicy policy, boolean combineHeaders,
      Delayer delayer) {
    this.rules = rules;
    this.policy = policy;
    this.combineHeaders = combineHeaders;
    this.delayer = delayer;
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
      return chain.filter(exchange);
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
    return o.passes() ? chain.filter(exchange)
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
        ? delayer.delay(o.delayNanos()).then(Mono.defer(() -> chain.filter(exchange)))
        : chain.filter(exchange);
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

  /** Settings of a {@link SluiceWebFilter}: {@link FilterBuilder}'s, and how a queued request waits. */
  public static final class Builder extends FilterBuilder<WebRule, Builder> {
    private Delayer delayer = nanos -> Mono.delay(Duration.ofNanos(nanos));

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

    public SluiceWebFilter build() {
      return new SluiceWebFilter(rules("SluiceWebFilter"),
          new FilterPolicy(headers(), missingKey(), isDryRun(), LOG), isCombineHeaders(), delayer);
    }
  }
}

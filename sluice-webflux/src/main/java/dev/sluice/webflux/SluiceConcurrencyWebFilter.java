package dev.sluice.webflux;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.http.ConcurrencyAnswers;
import dev.sluice.http.ConcurrencyRuleSettings;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.internal.FilterPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * The reactive twin of the servlet {@code SluiceConcurrencyFilter}: a Spring WebFlux
 * {@link WebFilter} that caps the requests in flight without blocking an event-loop thread (it
 * acquires with {@link dev.sluice.concurrency.ConcurrencyLimiter#acquireAsync}, so a store's round
 * trip or a wait holds no thread). Every {@link WebConcurrencyRule} that matches a request must
 * give it a permit, or it is refused as the servlet filter refuses ({@link ConcurrencyAnswers}:
 * {@code 429} per client, {@code 503} shedding, {@code Retry-After}, a problem document) and the
 * permits it got are given back. A request that passes holds its permits until its response
 * completes, fails or is cancelled (the client went away); each permit ends once, with the
 * outcome read from the response ({@code IGNORED} for a cancellation).
 *
 * <pre>{@code
 * @Bean
 * WebFilter inFlight(ConcurrencyLimiter backend) {
 *   return SluiceConcurrencyWebFilter.builder()
 *       .rule(WebConcurrencyRule.path("/api/**").limiter(backend).global().build())
 *       .build();
 * }
 * }</pre>
 */
public final class SluiceConcurrencyWebFilter implements WebFilter {
  private final List<WebConcurrencyRule> rules;
  private final MissingKey missingKey;
  private final AtomicLong refused = new AtomicLong();

  private SluiceConcurrencyWebFilter(List<WebConcurrencyRule> rules, MissingKey missingKey) {
    this.rules = rules;
    this.missingKey = missingKey;
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    PathContainer path = request.getPath().pathWithinApplication();
    String method = request.getMethod().name();
    List<WebConcurrencyRule> matched = new ArrayList<>(2);
    for (WebConcurrencyRule r : rules) {
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
            return SluiceWebFilter.writeProblem(exchange.getResponse(), settings.missingKey());
          }
          String key = found == NO_KEY ? FilterPolicy.SHARED_KEY : found;
          return Mono.fromFuture(() -> settings.limiter().acquireAsync(key, 1,
                  settings.priorityOf(exchange.getRequest()),
                  settings.waitFor(key, exchange.getRequest().getHeaders()::getFirst)))
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
          return SluiceWebFilter.writeProblem(exchange.getResponse(), new RateLimitProblem(400,
              "Bad Request", "the request cannot be limited: " + e.getMessage()));
        })
        // the client went away while a permit was asked for: what was taken goes back (a
        // permit granted to the cancelled future is ended by the limiter)
        .doOnCancel(() -> release(held, Outcome.IGNORED));
  }

  /** Stands for "this request has no key" (compared by identity). */
  private static final String NO_KEY = new String("no key");

  private Mono<Void> refuse(ServerWebExchange exchange, Acquisition a,
      ConcurrencyRuleSettings<ServerHttpRequest, WebKeyResolver> settings) {
    refused.incrementAndGet();
    exchange.getResponse().getHeaders().set("Retry-After",
        Long.toString(settings.retryAfterSeconds()));
    return SluiceWebFilter.writeProblem(exchange.getResponse(),
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

  /** Requests refused since start. */
  public long refusedRequests() {
    return refused.get();
  }

  /** Settings of a {@link SluiceConcurrencyWebFilter}: its rules, applied in order. */
  public static final class Builder {
    private final List<WebConcurrencyRule> rules = new ArrayList<>();
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
    public Builder rule(WebConcurrencyRule rule) {
      rules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalStateException if there is no rule
     */
    public SluiceConcurrencyWebFilter build() {
      if (rules.isEmpty()) {
        throw new IllegalStateException("SluiceConcurrencyWebFilter needs at least one rule");
      }
      return new SluiceConcurrencyWebFilter(List.copyOf(rules), missingKey);
    }
  }
}

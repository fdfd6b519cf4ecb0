package dev.sluice.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Priority;
import dev.sluice.http.MissingKey;
import dev.sluice.testkit.ManualClock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The WebFlux filter's concurrency rules: a request holds its permits until its response completes,
 * fails or is cancelled; the excess is refused as the servlet filter refuses it.
 */
class SluiceWebFilterConcurrencyTest {
  private final ManualClock clock = new ManualClock();
  private final List<PermitEnd> ends = new CopyOnWriteArrayList<>();

  private ConcurrencyLimiter limiter(int limit) {
    return ConcurrencyLimiter.builder().limit(limit).share(Priority.SHEDDABLE, 0.5)
        .onPermitEnd(ends::add).clock(clock).scheduler(clock).build();
  }

  private static MockServerWebExchange get(String path, String... headers) {
    MockServerHttpRequest.BaseBuilder<?> b = MockServerHttpRequest.get(path);
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return MockServerWebExchange.from(b);
  }

  /** A chain whose response completes when {@code sink} does. */
  private static WebFilterChain pending(Sinks.Empty<Void> sink) {
    return exchange -> sink.asMono();
  }

  private static final WebFilterChain DONE = exchange -> Mono.empty();

  @Test
  void bothKindsOfRule_inOneFilter_aRequestTheRateLimitRefuses_takesNoPermit() {
    RateLimiter rate = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perHour(1))).clock(clock)
        .build();
    ConcurrencyLimiter backend = limiter(1);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebRule.path("/api/**").limiter(rate).key(WebKeys.header("X-Api-Key")).build())
        .rule(WebConcurrencyRule.path("/api/**").limiter(backend).global().build()).build();
    Sinks.Empty<Void> one = Sinks.empty();
    f.filter(get("/api/a", "X-Api-Key", "k"), pending(one)).subscribe();
    assertThat(backend.inFlight("global")).isEqualTo(1);
    MockServerWebExchange shed = get("/api/b", "X-Api-Key", "k");
    f.filter(shed, DONE).block(Duration.ofSeconds(5));
    assertThat(shed.getResponse().getStatusCode()).as("admitted by the rate limit, shed")
        .isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(shed.getResponse().getHeaders().getFirst("RateLimit")).isNotNull();
    one.tryEmitEmpty();
    MockServerWebExchange limited = get("/api/c", "X-Api-Key", "k");
    f.filter(limited, DONE).block(Duration.ofSeconds(5));
    assertThat(limited.getResponse().getStatusCode()).as("the bucket of 2 is full")
        .isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    assertThat(backend.inFlight("global")).isZero();
    assertThat(f.rejectedRequests()).isEqualTo(1);
    assertThat(f.concurrencyRefusals()).isEqualTo(1);
    assertThat(ends).as("one permit, the first request's; the 429 took none").hasSize(1);
  }

  @Test
  void aHealthShedder_refusesSheddableWorkWith503NamingTheSignal_andEndsAdmissionsWithTheirResponses() {
    AtomicReference<Double> cpu = new AtomicReference<>(0.0);
    HealthShedder shedder = HealthShedder.builder()
        .signal(HealthSignal.of("cpu", cpu::get), 0.80, 0.90).clock(clock).guard(false).build();
    SluiceWebFilter f = SluiceWebFilter.builder()
        .health(shedder, req -> "batch".equals(req.getHeaders().getFirst("X-Priority"))
            ? Priority.SHEDDABLE : Priority.CRITICAL)
        .build();
    Sinks.Empty<Void> one = Sinks.empty();
    f.filter(get("/api/a", "X-Priority", "batch"), pending(one)).subscribe();
    assertThat(shedder.inFlight()).as("admitted, held until its response completes").isEqualTo(1);
    cpu.set(0.99);
    clock.advance(Duration.ofSeconds(1));
    MockServerWebExchange shed = get("/api/b", "X-Priority", "batch");
    f.filter(shed, DONE).block(Duration.ofSeconds(5));
    assertThat(shed.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(shed.getResponse().getHeaders().getFirst("Retry-After")).isEqualTo("1");
    assertThat(shed.getResponse().getBodyAsString().block())
        .contains("shedding load: shed: cpu at 0.99 (sheds SHEDDABLE from 0.80");
    MockServerWebExchange critical = get("/api/c");
    f.filter(critical, DONE).block(Duration.ofSeconds(5));
    assertThat(critical.getResponse().getStatusCode()).as("critical work still runs").isNull();
    one.tryEmitEmpty();
    assertThat(shedder.inFlight()).isZero();
    assertThat(f.healthRefusals()).isEqualTo(1);
  }

  /**
   * A rule's flow reaches the limiter: with fair queuing, three tenants' requests waiting behind
   * a held one count as three flows, and a request without the header is the unnamed flow.
   */
  @Test
  void aRulesFlow_isTheTenantsFairQueuingFlow() {
    ConcurrencyLimiter backend = ConcurrencyLimiter.builder().limit(1)
        .fairQueuing(dev.sluice.concurrency.FairQueuing.of(1024, 4, 10)).onPermitEnd(ends::add)
        .clock(clock).scheduler(clock).build();
    SluiceWebFilter f = SluiceWebFilter.builder().rule(WebConcurrencyRule.path("/api/**")
        .limiter(backend).global().flow(WebKeys.header("X-Tenant"))
        .maxWait(Duration.ofSeconds(10)).build()).build();
    Sinks.Empty<Void> held = Sinks.empty();
    f.filter(get("/api/a", "X-Tenant", "a"), pending(held)).subscribe();
    List<Sinks.Empty<Void>> waiting = new java.util.ArrayList<>();
    for (String tenant : List.of("b", "c", "d")) {
      Sinks.Empty<Void> s = Sinks.empty();
      waiting.add(s);
      f.filter(get("/api/x", "X-Tenant", tenant), pending(s)).subscribe();
    }
    Sinks.Empty<Void> unnamed = Sinks.empty();
    f.filter(get("/api/y"), pending(unnamed)).subscribe();
    assertThat(backend.waiting("global")).isEqualTo(4);
    assertThat(backend.stats().flows(Priority.NORMAL)).as("three tenants and the unnamed flow")
        .isEqualTo(4.0);
    held.tryEmitEmpty();
    waiting.forEach(Sinks.Empty::tryEmitEmpty);
    unnamed.tryEmitEmpty();
    assertThat(backend.stats().dispatched(Priority.NORMAL)).isEqualTo(4);
    assertThat(backend.inFlight("global")).isZero();
    assertThat(ends).hasSize(5);
  }

  @Test
  void globalShedding_holdsPermitsUntilTheResponseCompletes_andRefusesTheExcessWith503() {
    ConcurrencyLimiter backend = limiter(2);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebConcurrencyRule.path("/api/**").limiter(backend).global().build()).build();
    Sinks.Empty<Void> one = Sinks.empty();
    Sinks.Empty<Void> two = Sinks.empty();
    f.filter(get("/api/a"), pending(one)).subscribe();
    f.filter(get("/api/b"), pending(two)).subscribe();
    assertThat(backend.inFlight("global")).isEqualTo(2);
    MockServerWebExchange third = get("/api/c");
    f.filter(third, DONE).block(Duration.ofSeconds(5));
    assertThat(third.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(third.getResponse().getHeaders().getFirst("Retry-After")).isEqualTo("1");
    assertThat(third.getResponse().getHeaders().getContentType())
        .hasToString("application/problem+json");
    assertThat(third.getResponse().getBodyAsString().block()).contains("\"status\":503")
        .contains("shedding load (concurrency limit /api/**: 2 of 2 in flight; every permit is"
            + " in flight)")
        .contains("\"limit\":\"/api/**\",\"reason\":\"full\",\"inFlight\":2,\"max\":2}");
    one.tryEmitEmpty();
    assertThat(backend.inFlight("global")).isEqualTo(1);
    MockServerWebExchange fourth = get("/api/d");
    f.filter(fourth, DONE).block(Duration.ofSeconds(5));
    assertThat(fourth.getResponse().getStatusCode()).isNull();   // passed to the handler
    two.tryEmitEmpty();
    assertThat(backend.inFlight("global")).isZero();
    assertThat(f.concurrencyRefusals()).isEqualTo(1);
    // an unmatched path passes untouched
    MockServerWebExchange other = get("/health");
    f.filter(other, DONE).block(Duration.ofSeconds(5));
    assertThat(other.getResponse().getStatusCode()).isNull();
  }

  @Test
  void perClientCap_refusesThatClientWith429() {
    ConcurrencyLimiter perClient = limiter(1);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebConcurrencyRule.path("/**").limiter(perClient)
            .perClient(WebKeys.header("X-Client")).build()).build();
    Sinks.Empty<Void> a = Sinks.empty();
    f.filter(get("/x", "X-Client", "a"), pending(a)).subscribe();
    MockServerWebExchange again = get("/x", "X-Client", "a");
    f.filter(again, DONE).block(Duration.ofSeconds(5));
    assertThat(again.getResponse().getStatusCode()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    MockServerWebExchange other = get("/x", "X-Client", "b");
    f.filter(other, DONE).block(Duration.ofSeconds(5));
    assertThat(other.getResponse().getStatusCode()).isNull();
    a.tryEmitEmpty();
    assertThat(perClient.inFlight("x-client:a")).isZero();
  }

  /**
   * Issue 44, item 7: a per-client rule and a request without the client's header: 400 naming
   * the limit by default (as rate rules), or one shared key, or no limit from that rule.
   */
  @Test
  void aRequestWithoutItsClientKey_isRefused400_orSharesOneKey_orPasses() {
    ConcurrencyLimiter perClient = limiter(1);
    for (MissingKey policy : MissingKey.values()) {
      SluiceWebFilter.Builder b = SluiceWebFilter.builder()
          .rule(WebConcurrencyRule.path("/**").limiter("per-client", perClient)
              .perClient(WebKeys.header("X-Client")).build());
      if (policy != MissingKey.REJECT) {
        b.onMissingKey(policy);
      }
      SluiceWebFilter f = b.build();
      Sinks.Empty<Void> held = Sinks.empty();
      MockServerWebExchange first = get("/x");
      f.filter(first, pending(held)).subscribe();
      MockServerWebExchange second = get("/x");
      f.filter(second, DONE).block(Duration.ofSeconds(5));
      switch (policy) {
        case REJECT -> {
          assertThat(first.getResponse().getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
          assertThat(first.getResponse().getBodyAsString().block())
              .contains("the concurrency limit per-client of rule /** counts clients by")
              .contains("\"limit\":\"per-client\",\"reason\":\"missing_key\"");
          assertThat(perClient.inFlight("shared:no-key")).isZero();
        }
        case SHARED -> {
          assertThat(perClient.inFlight("shared:no-key")).isEqualTo(1);
          assertThat(second.getResponse().getStatusCode())
              .as("both share one key of limit 1").isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
        }
        default -> {
          assertThat(first.getResponse().getStatusCode()).as("passed").isNull();
          assertThat(second.getResponse().getStatusCode()).as("passed").isNull();
          assertThat(perClient.inFlight("shared:no-key")).isZero();
        }
      }
      held.tryEmitEmpty();
      assertThat(perClient.inFlight("shared:no-key")).isZero();
    }
  }

  @Test
  void errorsClientErrorsAndCancellations_endTheirPermits() {
    ConcurrencyLimiter backend = limiter(1);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebConcurrencyRule.path("/**").limiter(backend).global().build()).build();
    assertThatThrownBy(() -> f.filter(get("/x"),
        exchange -> Mono.error(new IllegalStateException("the backend failed")))
        .block(Duration.ofSeconds(5))).hasMessageContaining("the backend failed");
    f.filter(get("/x"), exchange -> {
      exchange.getResponse().setStatusCode(HttpStatus.NOT_FOUND);
      return Mono.empty();
    }).block(Duration.ofSeconds(5));
    Sinks.Empty<Void> never = Sinks.empty();
    Disposable gone = f.filter(get("/x"), pending(never)).subscribe();
    assertThat(backend.inFlight("global")).isEqualTo(1);
    gone.dispose();   // the client went away
    assertThat(backend.inFlight("global")).isZero();
    f.filter(get("/x"), DONE).block(Duration.ofSeconds(5));
    assertThat(ends).extracting(PermitEnd::outcome).containsExactly(Outcome.DROPPED,
        Outcome.IGNORED, Outcome.IGNORED, Outcome.SUCCESS);
  }

  /**
   * Deadlines on the manual clock: a learned hold of 100 ms, so a wait of 100 ms and then 100 ms
   * of work; a request with 150 ms left is refused at once (DEADLINE), one with 250 ms left waits
   * what leaves time for its work, 150 ms, not maxWait; a deadline that cannot be read is
   * answered 400.
   */
  @Test
  void deadlines_refuseHopelessWaits_andBoundTheWait() {
    ConcurrencyLimiter backend = limiter(1);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebConcurrencyRule.path("/**").limiter(backend).global()
            .maxWait(Duration.ofSeconds(30)).build()).build();
    Sinks.Empty<Void> first = Sinks.empty();
    f.filter(get("/x"), pending(first)).subscribe();
    clock.advance(Duration.ofMillis(100));
    first.tryEmitEmpty();   // the limiter learns: a permit is held 100 ms
    Sinks.Empty<Void> busy = Sinks.empty();
    f.filter(get("/x"), pending(busy)).subscribe();
    MockServerWebExchange hopeless = get("/x", "grpc-timeout", "150m");
    f.filter(hopeless, DONE).block(Duration.ofSeconds(5));
    assertThat(hopeless.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(hopeless.getResponse().getBodyAsString().block())
        .contains("the expected wait is longer than the request's deadline");
    MockServerWebExchange hopeful = get("/x", "grpc-timeout", "250m");
    Mono<Void> waits = f.filter(hopeful, DONE).cache();
    waits.subscribe();
    assertThat(backend.waiting("global")).isEqualTo(1);
    clock.advance(Duration.ofMillis(149));
    assertThat(backend.waiting("global")).isEqualTo(1);
    clock.advance(Duration.ofMillis(1));   // its deadline less its work, far before maxWait
    waits.block(Duration.ofSeconds(5));
    assertThat(hopeful.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(hopeful.getResponse().getBodyAsString().block())
        .contains("no permit came within the wait");
    MockServerWebExchange unreadable = get("/x", "grpc-timeout", "later");
    f.filter(unreadable, DONE).block(Duration.ofSeconds(5));
    assertThat(unreadable.getResponse().getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(unreadable.getResponse().getBodyAsString().block())
        .contains("header grpc-timeout").contains("'later'");
    busy.tryEmitEmpty();
    assertThat(backend.inFlight("global")).isZero();
  }

  /** A request that may wait gets the permit released meanwhile, holding no thread. */
  @Test
  void aRequestThatMayWait_getsAReleasedPermit() {
    ConcurrencyLimiter backend = limiter(1);
    SluiceWebFilter f = SluiceWebFilter.builder()
        .rule(WebConcurrencyRule.path("/**").limiter(backend).global()
            .maxWait(Duration.ofSeconds(1)).build()).build();
    Sinks.Empty<Void> first = Sinks.empty();
    f.filter(get("/x"), pending(first)).subscribe();
    MockServerWebExchange waiting = get("/x");
    Mono<Void> second = f.filter(waiting, DONE).cache();
    second.subscribe();
    assertThat(backend.waiting("global")).isEqualTo(1);
    first.tryEmitEmpty();
    second.block(Duration.ofSeconds(5));
    assertThat(waiting.getResponse().getStatusCode()).isNull();
    MockServerWebExchange late = get("/x");
    Sinks.Empty<Void> third = Sinks.empty();
    f.filter(get("/x"), pending(third)).subscribe();
    Mono<Void> timingOut = f.filter(late, DONE).cache();
    timingOut.subscribe();
    clock.advance(Duration.ofSeconds(1));
    timingOut.block(Duration.ofSeconds(5));
    assertThat(late.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(late.getResponse().getBodyAsString().block())
        .contains("no permit came within the wait");
  }

  @Test
  void badRules_areRefused() {
    ConcurrencyLimiter l = limiter(1);
    assertThatThrownBy(() -> WebConcurrencyRule.path("/api/{").limiter(l).global().build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("/api/{");
    assertThatThrownBy(() -> WebConcurrencyRule.path("/api").limiter(l).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("perRoute()");
    assertThatThrownBy(() -> SluiceWebFilter.builder().build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one rule");
  }
}

package dev.sluice.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.testkit.ManualClock;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

class SluiceWebFilterTest {
  private final ManualClock clock = new ManualClock();
  private final AtomicInteger passed = new AtomicInteger();
  private final WebFilterChain chain = exchange -> {
    passed.incrementAndGet();
    return Mono.empty();
  };

  private RateLimiter limiter(Limit limit) {
    return Sluice.builder().limit(limit).clock(clock).scheduler(clock).build();
  }

  private static MockServerWebExchange get(String path, String ip, String... headers) {
    MockServerHttpRequest.BaseBuilder<?> b = MockServerHttpRequest.get(path)
        .remoteAddress(new InetSocketAddress(ip, 40000));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return MockServerWebExchange.from(b);
  }

  private MockServerWebExchange run(SluiceWebFilter filter, MockServerWebExchange x) {
    filter.filter(x, chain).block(Duration.ofSeconds(5));
    return x;
  }

  @Test
  void rejectsOverTheLimit_with429_RetryAfter_theRateLimitFields_andAProblemDocument() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)).named("api"));
    SluiceWebFilter f = SluiceWebFilter.builder().rule(WebRule.path("/api/**").limiter(l).build()).build();
    for (int i = 0; i < 2; i++) {
      MockServerWebExchange ok = run(f, get("/api/x", "192.0.2.1"));
      assertThat(ok.getResponse().getStatusCode()).isNull();   // not set: the handler's
      assertThat(ok.getResponse().getHeaders().getFirst("RateLimit")).isEqualTo("\"api\";r=" + (1 - i) + ";t=" + (i + 1));
    }
    MockServerWebExchange no = run(f, get("/api/x", "192.0.2.1"));
    assertThat(no.getResponse().getStatusCode()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    assertThat(no.getResponse().getHeaders().getFirst("Retry-After")).isEqualTo("1");
    assertThat(no.getResponse().getHeaders().getFirst("RateLimit-Policy")).isEqualTo("\"api\";q=2;w=2");
    assertThat(no.getResponse().getHeaders().getFirst("Access-Control-Expose-Headers"))
        .isEqualTo("RateLimit, RateLimit-Policy, Retry-After");
    assertThat(no.getResponse().getHeaders().getContentType()).hasToString("application/problem+json");
    assertThat(no.getResponse().getBodyAsString().block()).isEqualTo("{\"type\":\"about:blank\","
        + "\"title\":\"Too Many Requests\",\"status\":429,\"detail\":\"rate limit api exceeded;"
        + " retry after 1 s\"}");
    assertThat(passed).hasValue(2);
    assertThat(f.rejectedRequests()).isEqualTo(1);

    // another client has its own bucket; an unmatched path passes untouched
    assertThat(run(f, get("/api/x", "192.0.2.2")).getResponse().getStatusCode()).isNull();
    MockServerWebExchange other = run(f, get("/health", "192.0.2.1"));
    assertThat(other.getResponse().getHeaders().getFirst("RateLimit")).isNull();
    assertThat(passed).hasValue(4);

    clock.advance(Duration.ofSeconds(1));
    assertThat(run(f, get("/api/x", "192.0.2.1")).getResponse().getStatusCode()).isNull();
  }

  @Test
  void keysFromHeaders_methods_costs_andTheLegacyFields() {
    RateLimiter l = limiter(Limit.tokenBucket(10, Rate.perSecond(1)).named("rows"));
    SluiceWebFilter f = SluiceWebFilter.builder().headers(RateLimitHeaders.Mode.LEGACY)
        .rule(WebRule.path("/batch").methods("post").limiter(l).key(WebKeys.header("X-Api-Key"))
            .cost(r -> Double.parseDouble(r.getHeaders().getFirst("X-Rows"))).build())
        .build();
    MockServerWebExchange a = MockServerWebExchange.from(MockServerHttpRequest.post("/batch")
        .header("X-Api-Key", "a").header("X-Rows", "7.5"));
    run(f, a);
    assertThat(a.getResponse().getHeaders().getFirst("X-RateLimit-Remaining")).isEqualTo("2");
    MockServerWebExchange a2 = MockServerWebExchange.from(MockServerHttpRequest.post("/batch")
        .header("X-Api-Key", "a").header("X-Rows", "3"));
    run(f, a2);
    assertThat(a2.getResponse().getStatusCode()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    MockServerWebExchange b = MockServerWebExchange.from(MockServerHttpRequest.post("/batch")
        .header("X-Api-Key", "b").header("X-Rows", "3"));
    run(f, b);
    assertThat(b.getResponse().getStatusCode()).isNull();
    // GET is not held by a POST rule
    run(f, get("/batch", "192.0.2.1"));
    assertThat(passed).hasValue(3);

    MockServerWebExchange bad = MockServerWebExchange.from(MockServerHttpRequest.post("/batch")
        .header("X-Api-Key", "a").header("X-Rows", "many"));
    run(f, bad);
    assertThat(bad.getResponse().getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(bad.getResponse().getBodyAsString().block()).contains("Invalid request cost");
    MockServerWebExchange negative = MockServerWebExchange.from(MockServerHttpRequest.post("/batch")
        .header("X-Api-Key", "a").header("X-Rows", "-1"));
    run(f, negative);
    assertThat(negative.getResponse().getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(negative.getResponse().getBodyAsString().block()).contains("-1");
  }

  @Test
  void aRequestWithoutAKey_isRefused_allowed_orShared_asConfigured() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    WebRule rule = WebRule.path("/**").limiter(l).key(WebKeys.header("X-Api-Key")).build();
    MockServerWebExchange refused = run(SluiceWebFilter.builder().rule(rule).build(), get("/x", "192.0.2.1"));
    assertThat(refused.getResponse().getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(refused.getResponse().getBodyAsString().block()).contains("Missing rate-limit key");

    SluiceWebFilter allow = SluiceWebFilter.builder().rule(rule).onMissingKey(MissingKey.ALLOW).build();
    run(allow, get("/x", "192.0.2.1"));
    run(allow, get("/x", "192.0.2.1"));
    assertThat(passed).hasValue(2);

    SluiceWebFilter shared = SluiceWebFilter.builder().rule(rule).onMissingKey(MissingKey.SHARED).build();
    assertThat(run(shared, get("/x", "192.0.2.1")).getResponse().getStatusCode()).isNull();
    assertThat(run(shared, get("/x", "192.0.2.9")).getResponse().getStatusCode())
        .isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
  }

  @Test
  void dryRun_decidesAndCounts_butNeverRefuses() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    SluiceWebFilter f = SluiceWebFilter.builder().dryRun(true)
        .rule(WebRule.path("/**").limiter(l).build()).build();
    for (int i = 0; i < 3; i++) {
      MockServerWebExchange x = run(f, get("/x", "192.0.2.1"));
      assertThat(x.getResponse().getStatusCode()).isNull();
      assertThat(x.getResponse().getHeaders().getFirst("RateLimit")).isNull();
    }
    assertThat(passed).hasValue(3);
    assertThat(f.dryRunRejections()).isEqualTo(2);
    assertThat(l.check("ip:192.0.2.1").isAllowed()).isFalse();   // the first was charged
  }

  @Test
  void aQueue_holdsEachRequestForItsDelay_onNoThread_andRefusesWhenTheQueueIsFull() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(2)));
    SluiceWebFilter f = SluiceWebFilter.builder()
        .delayer(nanos -> Mono.create(sink -> clock.schedule(() -> sink.success(), nanos)))
        .rule(WebRule.path("/**").limiter(l).queue().build()).build();
    run(f, get("/x", "192.0.2.1"));                  // an empty queue: no delay
    assertThat(passed).hasValue(1);
    MockServerWebExchange queued = get("/x", "192.0.2.1");
    Mono<Void> waiting = f.filter(queued, chain).cache();
    waiting.subscribe();
    assertThat(passed).hasValue(1);                 // held, on no thread: behind one at 2/s
    assertThat(clock.pendingTasks()).isEqualTo(1);
    assertThat(queued.getResponse().getHeaders().getFirst("RateLimit")).isNotNull();
    MockServerWebExchange full = run(f, get("/x", "192.0.2.1"));   // 2 queued: the bucket is full
    assertThat(full.getResponse().getStatusCode()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
    clock.advance(Duration.ofMillis(499));
    assertThat(passed).hasValue(1);
    clock.advance(Duration.ofMillis(1));            // its turn at exactly the leak rate
    waiting.block(Duration.ofSeconds(5));
    assertThat(passed).hasValue(2);
    assertThat(queued.getResponse().getStatusCode()).isNull();
  }

  @Test
  void aStoreThatIsDown_gets503WithRetryAfter1_underFailClosed() {
    DecisionStore down = new DecisionStore() {
      @Override
      public long ticksPerSecond() {
        return 1_000_000;
      }

      @Override
      public Observation apply(String key, StoreRequest request) {
        throw new IllegalStateException("down");
      }

      @Override
      public void reset(String key) {}
    };
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1)))
        .store(down).onStoreFailure(StoreFailure.FAIL_CLOSED).build();
    SluiceWebFilter f = SluiceWebFilter.builder().rule(WebRule.path("/**").limiter(l).build()).build();
    MockServerWebExchange x = run(f, get("/x", "192.0.2.1"));
    assertThat(x.getResponse().getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
    assertThat(x.getResponse().getHeaders().getFirst("Retry-After")).isEqualTo("1");
    assertThat(x.getResponse().getHeaders().getFirst("RateLimit")).isNull();
    assertThat(f.unavailableResponses()).isEqualTo(1);
  }

  @Test
  void badSettings_areRefusedWithTheValue() {
    RateLimiter windows = limiter(Limit.fixedWindow(5, Duration.ofSeconds(1)).named("w"));
    assertThatThrownBy(() -> WebRule.path("api")).hasMessageContaining("'api'");
    assertThatThrownBy(() -> WebRule.path("/a/{x")).hasMessageContaining("/a/{x");
    assertThatThrownBy(() -> WebRule.path("/").methods("GE T")).hasMessageContaining("GE T");
    assertThatThrownBy(() -> WebRule.path("/").limiter(windows).queue().build())
        .hasMessageContaining("queue mode needs bucket limits").hasMessageContaining("w");
    assertThatThrownBy(() -> WebKeys.header("X Bad")).hasMessageContaining("X Bad");
    assertThatThrownBy(() -> WebKeys.clientIp(java.util.List.of("10.0.0.0/33"), 64))
        .hasMessageContaining("10.0.0.0/33");
    assertThatThrownBy(() -> SluiceWebFilter.builder().build()).hasMessageContaining("at least one rule");
  }

  @Test
  void clientIp_believesForwardedOnlyFromATrustedProxy_andGroupsIpv6() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    WebKeyResolver ip = WebKeys.clientIp(java.util.List.of("10.0.0.0/8"), 64);
    assertThat(ip.key(get("/", "10.1.2.3", "X-Forwarded-For", "198.51.100.7")).block())
        .isEqualTo("ip:198.51.100.7");
    assertThat(ip.key(get("/", "192.0.2.1", "X-Forwarded-For", "198.51.100.7")).block())
        .isEqualTo("ip:192.0.2.1");
    assertThat(ip.key(get("/", "2001:db8::1")).block()).isEqualTo("ip:2001:db8:0:0:0:0:0:0/64");
    assertThat(WebKeys.inGroup(WebKeys.header("X-Tenant"), ip)
        .key(get("/", "192.0.2.1", "X-Tenant", "acme")).block())
        .isEqualTo("x-tenant:acme\u001fip:192.0.2.1");
    assertThat(WebKeys.inGroup(WebKeys.header("X-Tenant"), ip).key(get("/", "192.0.2.1")).blockOptional())
        .isEmpty();
    Decision d = l.tryAcquire("ip:192.0.2.1");
    assertThat(d.isAllowed()).isTrue();
  }

  @Test
  void principalKeys_nameTheUser_andAnAnonymousRequestHasNone() {
    java.security.Principal alice = () -> "alice";
    assertThat(WebKeys.principal().key(
        get("/", "192.0.2.1").mutate().principal(Mono.just(alice)).build()).block())
        .isEqualTo("user:alice");
    assertThat(WebKeys.principal().key(get("/", "192.0.2.1")).blockOptional()).isEmpty();
  }
}

package dev.sluice.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Group;
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
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.Principal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The filter in a real Jetty 12 servlet container, over real HTTP. */
class SluiceFilterTest {
  private final ManualClock clock = new ManualClock();
  private final HttpClient http = HttpClient.newHttpClient();
  private final AtomicInteger served = new AtomicInteger();
  private Server server;
  private String base;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  private void start(Filter... filters) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler("/app");
    for (Filter f : filters) {
      context.addFilter(new FilterHolder(f), "/*", EnumSet.of(DispatcherType.REQUEST));
    }
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override
      protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        served.incrementAndGet();
        resp.setContentType("text/plain");
        resp.getWriter().write("ok");
      }
    }), "/*");
    server.setHandler(context);
    server.start();
    base = "http://127.0.0.1:" + connector.getLocalPort() + "/app";
  }

  private RateLimiter limiter(Limit... limits) {
    return Sluice.builder().limits(limits).clock(clock).scheduler(clock).build();
  }

  private HttpResponse<String> send(String method, String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
        .method(method, HttpRequest.BodyPublishers.noBody());
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void admitsThenAnswers429_withRetryAfterProblemJsonAndRateLimitFields() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(0.4)).named("api"));
    start(SluiceFilter.builder().rule(Rule.path("/api/**").limiter(l).build()).build());
    HttpResponse<String> first = send("GET", "/api/items");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.body()).isEqualTo("ok");
    assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=2;w=5");
    assertThat(first.headers().firstValue("RateLimit")).hasValue("\"api\";r=1;t=3");
    assertThat(first.headers().firstValue("Access-Control-Expose-Headers"))
        .hasValue("RateLimit, RateLimit-Policy, Retry-After");
    assertThat(first.headers().firstValue("Retry-After")).isEmpty();
    assertThat(send("GET", "/api/items").statusCode()).isEqualTo(200);
    HttpResponse<String> third = send("GET", "/api/items");
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(third.headers().firstValue("Retry-After")).hasValue("3");   // 2.5 s, rounded up
    assertThat(third.headers().firstValue("RateLimit")).hasValue("\"api\";r=0;t=5");
    assertThat(third.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    assertThat(third.body()).contains("\"status\":429").contains("\"title\":\"Too Many Requests\"")
        .contains("retry after 3 s");
    assertThat(served.get()).isEqualTo(2);
    clock.advance(Duration.ofMillis(2500));
    assertThat(send("GET", "/api/items").statusCode()).isEqualTo(200);
  }

  @Test
  void retryAfter_isAtLeastOneSecond() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(100)));
    start(SluiceFilter.builder().rule(Rule.path("/**").limiter(l).build()).build());
    send("GET", "/x");
    HttpResponse<String> r = send("GET", "/x");
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.headers().firstValue("Retry-After")).hasValue("1");   // 10 ms → 1
  }

  @Test
  void legacyHeaders_andNone() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(5, Rate.perSecond(1)));
    RateLimiter m = limiter(Limit.leakyBucket(1, Rate.perSecond(1)));
    start(SluiceFilter.builder().headers(RateLimitHeaders.Mode.LEGACY)
            .rule(Rule.path("/legacy").limiter(l).build()).build(),
        SluiceFilter.builder().headers(RateLimitHeaders.Mode.NONE)
            .rule(Rule.path("/none").limiter(m).build()).build());
    HttpResponse<String> r = send("GET", "/legacy");
    assertThat(r.headers().firstValue("X-RateLimit-Limit")).hasValue("5");
    assertThat(r.headers().firstValue("X-RateLimit-Remaining")).hasValue("4");
    assertThat(r.headers().firstValue("X-RateLimit-Reset")).hasValue("1");
    assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    assertThat(send("GET", "/none").headers().firstValue("RateLimit")).isEmpty();
    HttpResponse<String> none = send("GET", "/none");
    assertThat(none.statusCode()).isEqualTo(429);
    assertThat(none.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(none.headers().firstValue("X-RateLimit-Limit")).isEmpty();
  }

  @Test
  void rules_matchMethodAndPath_firstMatchDecides_unmatchedPass() throws Exception {
    RateLimiter writes = limiter(Limit.leakyBucket(1, Rate.perHour(1)).named("writes"));
    RateLimiter reads = limiter(Limit.leakyBucket(3, Rate.perHour(1)).named("reads"));
    start(SluiceFilter.builder()
        .rule(Rule.path("/api/*/orders").methods("post", "PUT").limiter(writes).build())
        .rule(Rule.path("/api/**").limiter(reads).build()).build());
    assertThat(send("POST", "/api/u1/orders").statusCode()).isEqualTo(200);
    assertThat(send("POST", "/api/u1/orders").statusCode()).isEqualTo(429);
    HttpResponse<String> get = send("GET", "/api/u1/orders");
    assertThat(get.statusCode()).isEqualTo(200);
    assertThat(get.headers().firstValue("RateLimit-Policy").orElse("")).startsWith("\"reads\"");
    assertThat(send("GET", "/api").statusCode()).isEqualTo(200);
    assertThat(send("POST", "/api/u1/x/orders").headers().firstValue("RateLimit-Policy").orElse(""))
        .as("* stays within one segment").startsWith("\"reads\"");
    for (int i = 0; i < 5; i++) {
      assertThat(send("GET", "/public/page").statusCode()).isEqualTo(200);
    }
    assertThat(send("GET", "/public/page").headers().firstValue("RateLimit")).isEmpty();
  }

  @Test
  void headerKeys_areSeparate_andMissingKeysFollowTheRule() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    RateLimiter shared = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    RateLimiter open = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    start(SluiceFilter.builder().rule(Rule.path("/reject").limiter(l).key(Keys.header("X-Api-Key")).build()).build(),
        SluiceFilter.builder().onMissingKey(MissingKey.SHARED)
            .rule(Rule.path("/shared").limiter(shared).key(Keys.header("X-Api-Key")).build()).build(),
        SluiceFilter.builder().onMissingKey(MissingKey.ALLOW)
            .rule(Rule.path("/allow").limiter(open).key(Keys.header("X-Api-Key")).build()).build());
    assertThat(send("GET", "/reject", "X-Api-Key", "a").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/reject", "X-Api-Key", "a").statusCode()).isEqualTo(429);
    assertThat(send("GET", "/reject", "X-Api-Key", "b").statusCode()).isEqualTo(200);
    HttpResponse<String> missing = send("GET", "/reject");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.body()).contains("Missing rate-limit key");
    assertThat(send("GET", "/shared").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/shared").statusCode()).as("one bucket for all keyless").isEqualTo(429);
    assertThat(send("GET", "/shared", "X-Api-Key", "c").statusCode()).isEqualTo(200);
    for (int i = 0; i < 3; i++) {
      assertThat(send("GET", "/allow").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void clientIp_forwardedHeadersCountOnlyFromTrustedProxies() throws Exception {
    RateLimiter untrusting = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    RateLimiter trusting = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    start(SluiceFilter.builder().rule(Rule.path("/direct").limiter(untrusting).key(Keys.clientIp()).build()).build(),
        SluiceFilter.builder().rule(Rule.path("/proxied").limiter(trusting)
            .key(Keys.clientIp(List.of("127.0.0.0/8", "10.0.0.0/8"), 64)).build()).build());
    // not trusted: a client cannot pick its own key with X-Forwarded-For
    assertThat(send("GET", "/direct", "X-Forwarded-For", "203.0.113.1").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/direct", "X-Forwarded-For", "203.0.113.2").statusCode()).isEqualTo(429);
    // trusted loopback proxy: the forwarded client is the key, walking back through trusted hops
    assertThat(send("GET", "/proxied", "X-Forwarded-For", "203.0.113.1, 10.1.2.3").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/proxied", "X-Forwarded-For", "203.0.113.1").statusCode()).isEqualTo(429);
    assertThat(send("GET", "/proxied", "Forwarded", "for=203.0.113.2;proto=https").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/proxied", "X-Forwarded-For", "203.0.113.2").statusCode()).isEqualTo(429);
    // IPv6 grouped by /64: two addresses of one subscriber share a bucket
    assertThat(send("GET", "/proxied", "Forwarded", "for=\"[2001:db8:1:2::1]:4711\"").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/proxied", "X-Forwarded-For", "2001:db8:1:2:ffff::9").statusCode()).isEqualTo(429);
    assertThat(send("GET", "/proxied", "X-Forwarded-For", "2001:db8:1:3::1").statusCode()).isEqualTo(200);
  }

  @Test
  void principalKey() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    Filter authenticate = (req, res, chain) -> {
      HttpServletRequest r = (HttpServletRequest) req;
      String user = r.getHeader("X-User");
      chain.doFilter(user == null ? r : new HttpServletRequestWrapper(r) {
        @Override
        public Principal getUserPrincipal() {
          return () -> user;
        }
      }, res);
    };
    start(authenticate, SluiceFilter.builder().rule(Rule.path("/**").limiter(l).key(Keys.principal()).build()).build());
    assertThat(send("GET", "/me", "X-User", "ann").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/me", "X-User", "ann").statusCode()).isEqualTo(429);
    assertThat(send("GET", "/me", "X-User", "bob").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/me").statusCode()).as("anonymous: no key").isEqualTo(400);
  }

  @Test
  void costFromTheRequest_andBadCostsAre400() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(100, Rate.perHour(1)));
    start(SluiceFilter.builder().rule(Rule.path("/batch").methods("POST").limiter(l)
        .cost(r -> Double.parseDouble(r.getHeader("X-Rows"))).build()).build());
    assertThat(send("POST", "/batch", "X-Rows", "60").statusCode()).isEqualTo(200);
    HttpResponse<String> over = send("POST", "/batch", "X-Rows", "41");
    assertThat(over.statusCode()).isEqualTo(429);
    assertThat(send("POST", "/batch", "X-Rows", "40").statusCode()).isEqualTo(200);
    HttpResponse<String> bad = send("POST", "/batch", "X-Rows", "lots");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("Invalid request cost").contains("lots");
    HttpResponse<String> negative = send("POST", "/batch", "X-Rows", "-3");
    assertThat(negative.statusCode()).isEqualTo(400);
    assertThat(negative.body()).contains("-3");
    HttpResponse<String> huge = send("POST", "/batch", "X-Rows", "1000");
    assertThat(huge.statusCode()).isEqualTo(429);
    assertThat(huge.headers().firstValue("Retry-After")).as("never fits: no retry").isEmpty();
    assertThat(huge.body()).contains("can ever admit");
  }

  @Test
  void queueMode_holdsEachRequestForItsDelay() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(2)));
    List<Long> waits = new ArrayList<>();
    start(SluiceFilter.builder().sleeper(nanos -> {
      synchronized (waits) {
        waits.add(nanos);
      }
    }).rule(Rule.path("/jobs").limiter(l).queue().build()).build());
    for (int i = 0; i < 3; i++) {
      assertThat(send("POST", "/jobs").statusCode()).isEqualTo(200);
    }
    assertThat(send("POST", "/jobs").statusCode()).as("queue full").isEqualTo(429);
    assertThat(waits).containsExactly(500_000_000L, 1_000_000_000L);   // 0, 0.5 s, 1 s
    assertThat(served.get()).isEqualTo(3);
    assertThatThrownBy(() -> Rule.path("/w").limiter(limiter(Limit.fixedWindow(3, Duration.ofSeconds(1))))
        .queue().build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("queue mode needs bucket limits");
  }

  @Test
  void dryRun_neverRejects_butCounts() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    SluiceFilter f = SluiceFilter.builder().dryRun(true).rule(Rule.path("/**").limiter(l).build()).build();
    start(f);
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> r = send("GET", "/x");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    }
    assertThat(f.dryRunRejections()).isEqualTo(3);
    assertThat(served.get()).isEqualTo(4);
  }

  @Test
  void storeDown_failClosedIs503_failOpenPasses() throws Exception {
    DecisionStore down = new DecisionStore() {
      @Override
      public long ticksPerSecond() {
        return 1_000_000;
      }

      @Override
      public Observation apply(String key, StoreRequest request) {
        throw new IllegalStateException("connection refused");
      }

      @Override
      public void reset(String key) {}
    };
    RateLimiter closed = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1))).store(down)
        .onStoreFailure(StoreFailure.FAIL_CLOSED).build();
    RateLimiter open = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1))).store(down)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    start(SluiceFilter.builder().rule(Rule.path("/closed").limiter(closed).build())
        .rule(Rule.path("/open").limiter(open).build()).build());
    HttpResponse<String> r = send("GET", "/closed");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body()).contains("Rate limiter unavailable");
    assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(r.headers().firstValue("RateLimit-Policy")).as("the limits are known").isPresent();
    assertThat(r.headers().firstValue("RateLimit")).as("what is left is not: no r=0 guess").isEmpty();
    HttpResponse<String> passed = send("GET", "/open");
    assertThat(passed.statusCode()).isEqualTo(200);
    assertThat(passed.headers().firstValue("RateLimit")).as("degraded: no guess either").isEmpty();
  }

  @Test
  void badConfiguration_failsWithTheValue() {
    assertThatThrownBy(() -> SluiceFilter.builder().build()).hasMessageContaining("at least one rule");
    assertThatThrownBy(() -> Rule.path("api/**")).hasMessageContaining("but was 'api/**'");
    assertThatThrownBy(() -> Keys.clientIp(List.of("10.0.0.0/33"), 64)).hasMessageContaining("'10.0.0.0/33'");
    assertThatThrownBy(() -> Keys.clientIp(List.of("proxy.internal"), 64)).hasMessageContaining("'proxy.internal'");
    assertThatThrownBy(() -> Keys.clientIp(List.of(), 0)).hasMessageContaining("ipv6PrefixBits must be between 1 and 128 but was 0");
    assertThatThrownBy(() -> Rule.path("/x").methods("GET /")).hasMessageContaining("'GET /'");
    assertThatThrownBy(() -> Rule.path("/x").build()).hasMessageContaining("needs a limiter");
  }

  @Test
  void disguisedPaths_areHeldToTheRuleOfThePathTheyReach() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)).named("api"));
    start(SluiceFilter.builder().rule(Rule.path("/api/**").limiter(l).key(r -> "all").build()).build());
    assertThat(send("GET", "/api/items").statusCode()).isEqualTo(200);
    for (String disguise : new String[] {"/api/./items", "/x/../api/items", "/%61pi/items",
        "/api/%69tems", "/api;v=1/items", "//api/items"}) {
      int status = send("GET", disguise).statusCode();
      assertThat(status).as(disguise + " must not pass the limit").isIn(400, 429);
    }
  }

  @Test
  void groupKeys_tenantFromAHeader_clientFromTheAddress_borrowWithinTheTenant() throws Exception {
    RateLimiter tenants = Sluice.builder().group(Group.sharing(Limit.leakyBucket(4, Rate.perHour(4)))
            .assured(Limit.leakyBucket(1, Rate.perHour(1)))
            .reserve(1)
            .by(Keys::groupOf))
        .clock(clock).scheduler(clock).build();
    start(SluiceFilter.builder().rule(Rule.path("/api/**").limiter(tenants)
        .key(Keys.inGroup(Keys.header("X-Tenant"), Keys.clientIp())).build()).build());
    // one client of tenant acme: assured 1, then borrows up to 4 - 1 = 3 in all
    for (int i = 0; i < 3; i++) {
      assertThat(send("GET", "/api/x", "X-Tenant", "acme").statusCode()).as("request %s", i)
          .isEqualTo(200);
    }
    HttpResponse<String> full = send("GET", "/api/x", "X-Tenant", "acme");
    assertThat(full.statusCode()).isEqualTo(429);
    assertThat(full.headers().firstValue("Retry-After")).isPresent();
    assertThat(send("GET", "/api/x", "X-Tenant", "globex").statusCode())
        .as("another tenant has its own parent").isEqualTo(200);
    assertThat(send("GET", "/api/x").statusCode()).as("no tenant: no key").isEqualTo(400);
    assertThatThrownBy(() -> Keys.groupOf("plain")).hasMessageContaining("\"plain\" has no group");
  }
}

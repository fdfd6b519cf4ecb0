package dev.sluice.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import dev.sluice.http.MissingKey;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The filter's concurrency rules in a real Jetty 12 container, over real HTTP: requests held in the
 * servlet hold their permits, the excess is refused (503 for shedding, 429 for a client's cap),
 * and every permit ends once, on completion, error, async completion or async timeout.
 */
class SluiceFilterConcurrencyTest {
  private final HttpClient http = HttpClient.newHttpClient();
  private final List<PermitEnd> ends = new CopyOnWriteArrayList<>();
  /** Requests inside the servlet, each waiting for its latch. */
  private final LinkedBlockingQueue<CountDownLatch> inside = new LinkedBlockingQueue<>();
  private final LinkedBlockingQueue<AsyncContext> asyncs = new LinkedBlockingQueue<>();
  private Server server;
  private String base;

  @AfterEach
  void stop() throws Exception {
    inside.forEach(CountDownLatch::countDown);
    if (server != null) {
      server.stop();
    }
  }

  private ConcurrencyLimiter limiter(int limit) {
    return ConcurrencyLimiter.builder().limit(limit).share(Priority.SHEDDABLE, 0.5)
        .onPermitEnd(ends::add).build();
  }

  private void start(Filter filter) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler("/app");
    FilterHolder holder = new FilterHolder(filter);
    holder.setAsyncSupported(true);
    context.addFilter(holder, "/*", EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));
    ServletHolder servlet = new ServletHolder(new HttpServlet() {
      @Override
      protected void service(HttpServletRequest req, HttpServletResponse resp)
          throws IOException, ServletException {
        String path = req.getPathInfo();
        if (path.startsWith("/fail")) {
          throw new ServletException("the backend failed");
        }
        if (path.startsWith("/missing")) {
          resp.sendError(404);
          return;
        }
        if (path.startsWith("/async")) {
          AsyncContext ctx = req.startAsync();
          ctx.setTimeout(path.contains("timeout") ? 200 : 30_000);
          asyncs.add(ctx);
          return;
        }
        if (path.startsWith("/hold")) {
          CountDownLatch latch = new CountDownLatch(1);
          inside.add(latch);
          try {
            latch.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        resp.setContentType("text/plain");
        resp.getWriter().write("ok");
      }
    });
    servlet.setAsyncSupported(true);
    context.addServlet(servlet, "/*");
    server.setHandler(context);
    server.start();
    base = "http://127.0.0.1:" + connector.getLocalPort() + "/app";
  }

  private HttpRequest request(String path, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  private HttpResponse<String> send(String path, String... headers) throws Exception {
    return http.send(request(path, headers), HttpResponse.BodyHandlers.ofString());
  }

  private CompletableFuture<HttpResponse<String>> hold(String path, String... headers)
      throws Exception {
    CompletableFuture<HttpResponse<String>> f =
        http.sendAsync(request(path, headers), HttpResponse.BodyHandlers.ofString());
    return f;
  }

  private CountDownLatch nextInside() throws InterruptedException {
    CountDownLatch l = inside.poll(10, TimeUnit.SECONDS);
    assertThat(l).as("a request reached the servlet").isNotNull();
    return l;
  }

  /**
   * A rule's flow reaches the limiter: with fair queuing, three tenants' requests (X-Tenant)
   * waiting behind a held one count as three flows (the same requests without a flow would be
   * one), and each is served when the permit comes back.
   */
  @Test
  void aRulesFlow_isTheTenantsFairQueuingFlow() throws Exception {
    ConcurrencyLimiter backend = ConcurrencyLimiter.builder().limit(1)
        .fairQueuing(dev.sluice.concurrency.FairQueuing.of(1024, 4, 10)).onPermitEnd(ends::add)
        .build();
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**").limiter(backend).global()
        .flow(Keys.header("X-Tenant")).maxWait(Duration.ofSeconds(10)).build()).build());
    CompletableFuture<HttpResponse<String>> held = hold("/hold/1", "X-Tenant", "a");
    CountDownLatch first = nextInside();
    List<CompletableFuture<HttpResponse<String>>> waiting = new java.util.ArrayList<>();
    for (String tenant : List.of("b", "c", "d")) {
      waiting.add(hold("/x", "X-Tenant", tenant));
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (backend.waiting("global") < 3 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertThat(backend.waiting("global")).isEqualTo(3);
    assertThat(backend.stats().flows(Priority.NORMAL)).as("three tenants, three flows")
        .isBetween(2.9, 3.0);
    first.countDown();
    assertThat(held.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    for (CompletableFuture<HttpResponse<String>> w : waiting) {
      assertThat(w.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    assertThat(backend.stats().dispatched(Priority.NORMAL)).isEqualTo(3);
    assertThat(ends).hasSize(4).extracting(PermitEnd::outcome).containsOnly(Outcome.SUCCESS);
  }

  @Test
  void globalShedding_refusesTheExcessWith503_andReleasesOnCompletion() throws Exception {
    ConcurrencyLimiter backend = limiter(2);
    SluiceFilter filter = SluiceFilter.builder()
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build();
    start(filter);
    CompletableFuture<HttpResponse<String>> one = hold("/hold/1");
    CountDownLatch first = nextInside();
    CompletableFuture<HttpResponse<String>> two = hold("/hold/2");
    CountDownLatch second = nextInside();
    assertThat(backend.inFlight("global")).isEqualTo(2);
    HttpResponse<String> third = send("/x");
    assertThat(third.statusCode()).isEqualTo(503);
    assertThat(third.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(third.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    assertThat(third.body()).contains("\"status\":503").contains("shedding load")
        .contains("2 of 2 in flight");
    first.countDown();
    second.countDown();
    assertThat(one.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(two.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(backend.inFlight("global")).isZero();
    assertThat(send("/x").statusCode()).isEqualTo(200);
    assertThat(filter.concurrencyRefusals()).isEqualTo(1);
    assertThat(ends).extracting(PermitEnd::outcome).containsOnly(Outcome.SUCCESS);
  }

  @Test
  void bothKindsOfRule_inOneFilter_aRequestTheRateLimitRefuses_takesNoPermit() throws Exception {
    RateLimiter rate = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perHour(1))).build();
    ConcurrencyLimiter backend = limiter(1);
    SluiceFilter filter = SluiceFilter.builder()
        .rule(Rule.path("/**").limiter(rate).build())
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build();
    start(filter);
    CompletableFuture<HttpResponse<String>> one = hold("/hold/1");
    CountDownLatch first = nextInside();
    assertThat(backend.inFlight("global")).isEqualTo(1);
    HttpResponse<String> shed = send("/x");
    assertThat(shed.statusCode()).as("the rate limit admits it, the concurrency rule sheds it")
        .isEqualTo(503);
    assertThat(shed.headers().firstValue("RateLimit")).as("the rate limit's fields").isPresent();
    first.countDown();
    assertThat(one.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    HttpResponse<String> limited = send("/x");
    assertThat(limited.statusCode()).as("the bucket of 2 is full").isEqualTo(429);
    assertThat(backend.inFlight("global")).isZero();
    assertThat(filter.rejectedRequests()).isEqualTo(1);
    assertThat(filter.concurrencyRefusals()).isEqualTo(1);
    assertThat(ends).as("one permit, the held request's; the 429 took none").hasSize(1)
        .extracting(PermitEnd::outcome).containsOnly(Outcome.SUCCESS);
  }

  @Test
  void aHealthShedder_refusesSheddableWorkWith503NamingTheSignal_andEndsAdmissionsWithTheirRequests()
      throws Exception {
    AtomicReference<Double> cpu = new AtomicReference<>(0.0);
    AtomicLong now = new AtomicLong();
    HealthShedder shedder = HealthShedder.builder()
        .signal(HealthSignal.of("cpu", cpu::get), 0.80, 0.90).clock(now::get).guard(false)
        .build();
    ConcurrencyLimiter backend = limiter(10);
    SluiceFilter filter = SluiceFilter.builder()
        .health(shedder, req -> "batch".equals(req.getHeader("X-Priority"))
            ? Priority.SHEDDABLE : Priority.CRITICAL)
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build();
    start(filter);
    CompletableFuture<HttpResponse<String>> held = hold("/hold/1", "X-Priority", "batch");
    CountDownLatch inside = nextInside();
    assertThat(shedder.inFlight()).as("admitted, and held while the request runs").isEqualTo(1);
    cpu.set(0.99);
    now.addAndGet(TimeUnit.SECONDS.toNanos(1));
    HttpResponse<String> shed = send("/x", "X-Priority", "batch");
    assertThat(shed.statusCode()).isEqualTo(503);
    assertThat(shed.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(shed.body()).contains("shedding load: shed: cpu at 0.99 (sheds SHEDDABLE from"
        + " 0.80");
    assertThat(send("/x").statusCode()).as("critical work still runs").isEqualTo(200);
    assertThat(backend.inFlight("global")).as("the shed request took no permit").isEqualTo(1);
    inside.countDown();
    assertThat(held.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(shedder.inFlight()).isZero();
    assertThat(filter.healthRefusals()).isEqualTo(1);
    assertThat(filter.concurrencyRefusals()).isZero();
  }

  @Test
  void perClientCap_refusesThatClientWith429_andServesOthers() throws Exception {
    ConcurrencyLimiter perClient = limiter(1);
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**").limiter(perClient)
        .perClient(Keys.header("X-Client")).build()).build());
    CompletableFuture<HttpResponse<String>> a = hold("/hold", "X-Client", "a");
    CountDownLatch aInside = nextInside();
    assertThat(perClient.inFlight("x-client:a")).isEqualTo(1);
    HttpResponse<String> again = send("/x", "X-Client", "a");
    assertThat(again.statusCode()).isEqualTo(429);
    assertThat(again.body()).contains("too many requests of this client in flight");
    assertThat(send("/x", "X-Client", "b").statusCode()).isEqualTo(200);
    aInside.countDown();
    assertThat(a.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(perClient.inFlight("x-client:a")).isZero();
  }

  /**
   * Issue 44, item 7: a per-client rule and a request without the client's header is answered
   * 400 naming the limit by default, as rate rules answer it (it used to share one key silently);
   * with MissingKey.SHARED such requests share one key.
   */
  @Test
  void aRequestWithoutItsClientKey_isRefused400_unlessTheyAreToShareOneKey() throws Exception {
    ConcurrencyLimiter perClient = limiter(1);
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**")
        .limiter("per-client", perClient).perClient(Keys.header("X-Client")).build()).build());
    HttpResponse<String> none = send("/x");
    assertThat(none.statusCode()).isEqualTo(400);
    assertThat(none.body()).contains("\"title\":\"Missing concurrency key\"")
        .contains("the concurrency limit per-client of rule /** counts clients by")
        .contains("\"limit\":\"per-client\",\"reason\":\"missing_key\"");
    assertThat(send("/x", "X-Client", "a").statusCode()).isEqualTo(200);
    stop();
    start(SluiceFilter.builder().onMissingKey(MissingKey.SHARED)
        .rule(ConcurrencyRule.path("/**").limiter(perClient).perClient(Keys.header("X-Client"))
            .build()).build());
    CompletableFuture<HttpResponse<String>> holding = hold("/hold");
    CountDownLatch inside = nextInside();
    assertThat(perClient.inFlight("shared:no-key")).isEqualTo(1);
    HttpResponse<String> second = send("/x");
    assertThat(second.statusCode()).as("limit 1 on the one shared key").isEqualTo(429);
    assertThat(second.body()).contains("\"limit\":\"/**\",\"reason\":\"full\"");
    inside.countDown();
    assertThat(holding.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  /** A per-client cap and a global shedder together: a refusal by the second gives back the first. */
  @Test
  void everyMatchingRule_mustAdmit_andARefusalGivesBackWhatWasTaken() throws Exception {
    ConcurrencyLimiter perClient = limiter(5);
    ConcurrencyLimiter backend = limiter(1);
    start(SluiceFilter.builder()
        .rule(ConcurrencyRule.path("/**").limiter(perClient).perClient(Keys.header("X-Client"))
            .build())
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build());
    CompletableFuture<HttpResponse<String>> a = hold("/hold", "X-Client", "a");
    CountDownLatch aInside = nextInside();
    assertThat(send("/x", "X-Client", "b").statusCode()).isEqualTo(503);
    assertThat(perClient.inFlight("x-client:b")).as("the per-client permit was given back").isZero();
    assertThat(perClient.inFlight("x-client:a")).isEqualTo(1);
    aInside.countDown();
    a.get(10, TimeUnit.SECONDS);
    assertThat(perClient.inFlight("x-client:a")).isZero();
    assertThat(backend.inFlight("global")).isZero();
  }

  @Test
  void failuresAndClientErrors_endTheirPermits_droppedAndIgnored() throws Exception {
    ConcurrencyLimiter backend = limiter(1);
    start(SluiceFilter.builder()
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build());
    assertThat(send("/fail").statusCode()).isEqualTo(500);
    assertThat(send("/missing").statusCode()).isEqualTo(404);
    assertThat(send("/x").statusCode()).isEqualTo(200);
    assertThat(backend.inFlight("global")).isZero();
    assertThat(ends).extracting(PermitEnd::outcome)
        .containsExactly(Outcome.DROPPED, Outcome.IGNORED, Outcome.SUCCESS);
  }

  @Test
  void anAsyncRequest_holdsItsPermitUntilItCompletes_orTimesOut() throws Exception {
    ConcurrencyLimiter backend = limiter(1);
    start(SluiceFilter.builder()
        .rule(ConcurrencyRule.path("/**").limiter(backend).global().build()).build());
    CompletableFuture<HttpResponse<String>> slow = hold("/async");
    AsyncContext ctx = asyncs.poll(10, TimeUnit.SECONDS);
    assertThat(ctx).isNotNull();
    assertThat(send("/x").statusCode()).as("the async request still holds the permit")
        .isEqualTo(503);
    ctx.getResponse().getWriter().write("done");
    ctx.complete();
    assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(backend.inFlight("global")).isZero();
    CompletableFuture<HttpResponse<String>> timingOut = hold("/async-timeout");
    assertThat(asyncs.poll(10, TimeUnit.SECONDS)).isNotNull();
    timingOut.get(10, TimeUnit.SECONDS);   // the container times it out after 200 ms
    assertThat(backend.inFlight("global")).isZero();
    assertThat(ends).extracting(PermitEnd::outcome)
        .containsExactly(Outcome.SUCCESS, Outcome.DROPPED);
  }

  /** Sheddable requests (a header says so) use half the permits; normal ones get the rest. */
  @Test
  void priorities_shedSheddableTrafficFirst() throws Exception {
    ConcurrencyLimiter backend = limiter(2);
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**").limiter(backend)
        .global().priority(req -> req.getHeader("X-Batch") != null ? Priority.SHEDDABLE
            : Priority.NORMAL).build()).build());
    CompletableFuture<HttpResponse<String>> batch = hold("/hold", "X-Batch", "1");
    CountDownLatch batchInside = nextInside();
    HttpResponse<String> shed = send("/x", "X-Batch", "1");
    assertThat(shed.statusCode()).isEqualTo(503);
    assertThat(shed.body()).contains("this priority's share is in use");
    assertThat(send("/x").statusCode()).isEqualTo(200);
    batchInside.countDown();
    batch.get(10, TimeUnit.SECONDS);
  }

  /**
   * A request whose grpc-timeout is shorter than its expected wait is refused at once (503,
   * DEADLINE), instead of queueing for the rule's 30 s; one without a deadline would wait.
   */
  @Test
  void aDeadlineShorterThanTheExpectedWait_isRefusedAtOnce() throws Exception {
    ConcurrencyLimiter backend = limiter(1);
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**").limiter(backend)
        .global().maxWait(Duration.ofSeconds(30)).build()).build());
    // one request held and ended teaches the limiter how long a permit is held
    CompletableFuture<HttpResponse<String>> first = hold("/hold");
    nextInside().countDown();
    assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    CompletableFuture<HttpResponse<String>> busy = hold("/hold");
    CountDownLatch busyInside = nextInside();
    HttpResponse<String> hopeless = send("/x", "grpc-timeout", "1n");
    assertThat(hopeless.statusCode()).isEqualTo(503);
    assertThat(hopeless.body()).contains("the expected wait is longer than the request's deadline");
    assertThat(backend.stats().refused(Refusal.DEADLINE)).isEqualTo(1);
    assertThat(backend.waiting("global")).isZero();
    busyInside.countDown();
    busy.get(10, TimeUnit.SECONDS);
  }

  /** A deadline shorter than maxWait bounds the wait: the request times out at its deadline. */
  @Test
  void aDeadlineHeader_boundsTheWait() throws Exception {
    ConcurrencyLimiter backend = ConcurrencyLimiter.builder().limit(1).deadlineAware(false)
        .build();
    start(SluiceFilter.builder().rule(ConcurrencyRule.path("/**").limiter(backend)
        .global().maxWait(Duration.ofSeconds(30)).deadlineHeaders("X-Timeout-Ms").build())
        .build());
    CompletableFuture<HttpResponse<String>> busy = hold("/hold");
    CountDownLatch busyInside = nextInside();
    CompletableFuture<HttpResponse<String>> waiting = hold("/x", "X-Timeout-Ms", "200");
    // answered when its 200 ms are over, long before the rule's 30 s
    HttpResponse<String> timedOut = waiting.get(10, TimeUnit.SECONDS);
    assertThat(timedOut.statusCode()).isEqualTo(503);
    assertThat(timedOut.body()).contains("no permit came within the wait");
    assertThat(backend.stats().refused(Refusal.TIMED_OUT)).isEqualTo(1);
    busyInside.countDown();
    busy.get(10, TimeUnit.SECONDS);
  }

  @Test
  void aDeadlineThatCannotBeRead_isAnswered400_namingIt_andDeadlinesCanBeOff() throws Exception {
    ConcurrencyLimiter backend = limiter(1);
    start(SluiceFilter.builder()
        .rule(ConcurrencyRule.path("/grpc/**").limiter(backend).global().build())
        .rule(ConcurrencyRule.path("/plain/**").limiter(backend).global().deadlineHeaders()
            .build()).build());
    HttpResponse<String> bad = send("/grpc/x", "grpc-timeout", "soon");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("header grpc-timeout").contains("'soon'");
    assertThat(backend.inFlight("global")).isZero();
    assertThat(send("/plain/x", "grpc-timeout", "soon").statusCode()).isEqualTo(200);
  }

  @Test
  void badRules_areRefused_namingWhatIsWrong() {
    ConcurrencyLimiter l = limiter(1);
    assertThatThrownBy(() -> ConcurrencyRule.path("api").limiter(l).global().build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'api'");
    assertThatThrownBy(() -> ConcurrencyRule.path("/api").limiter(l).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("perClient");
    assertThatThrownBy(() -> ConcurrencyRule.path("/api").global().build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("limiter");
    assertThatThrownBy(() -> ConcurrencyRule.path("/api").methods("GETT"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'GETT'");
    assertThatThrownBy(() -> ConcurrencyRule.path("/api").maxWait(Duration.ofMinutes(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT2M");
    assertThatThrownBy(() -> ConcurrencyRule.path("/api").deadlineHeaders("grpc timeout"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'grpc timeout'");
    assertThatThrownBy(() -> SluiceFilter.builder().build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one rule");
  }
}

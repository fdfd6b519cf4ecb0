package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.spring.app.TestApp;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Concurrency limits configured from YAML ({@code sluice.concurrency.*}), over real HTTP, on
 * either stack: a global rule sheds the excess with 503, a sheddable request is refused past its
 * share while a normal one passes, the meters show what is in flight, and
 * {@link ConcurrencyLimited} methods hold a permit per call (503 method-wide, 429 per key).
 * Subclasses set the stack and these properties.
 */
@AutoConfigureObservability
abstract class ConcurrencyContract {
  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();

  @LocalServerPort
  int port;

  @Autowired
  SluiceLimiters limiters;

  @Autowired
  MeterRegistry meters;

  @Autowired
  TestApp.Reports reports;

  private HttpRequest request(String path, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(20));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  private HttpResponse<String> get(String path, String... headers) throws Exception {
    return HTTP.send(request(path, headers), HttpResponse.BodyHandlers.ofString());
  }

  /** A request that stays in flight until its gate opens; returns once it reached the handler. */
  private CompletableFuture<HttpResponse<String>> held(String path, String... headers)
      throws Exception {
    CompletableFuture<HttpResponse<String>> f =
        HTTP.sendAsync(request(path, headers), HttpResponse.BodyHandlers.ofString());
    assertThat(TestApp.ARRIVED.tryAcquire(10, TimeUnit.SECONDS)).as("reached the handler").isTrue();
    return f;
  }

  private static String gate() {
    return UUID.randomUUID().toString();
  }

  private static void open(String gate) {
    TestApp.GATES.computeIfAbsent(gate, g -> new CompletableFuture<>()).complete("done " + gate);
  }

  private double gauge(String name, String limiter) {
    var g = meters.find(name).tag("limiter", limiter).gauge();
    return g == null ? Double.NaN : g.value();
  }

  @Test
  void aGlobalRule_shedsTheExcessWith503_andTheMetersShowWhatIsInFlight() throws Exception {
    ConcurrencyLimiter backend = limiters.concurrency("backend");
    assertThat(backend.limit("global")).isEqualTo(2);
    String a = gate();
    String b = gate();
    CompletableFuture<HttpResponse<String>> first = held("/slow/" + a);
    CompletableFuture<HttpResponse<String>> second = held("/slow/" + b);
    assertThat(gauge("sluice.concurrency.in.flight", "backend")).isEqualTo(2);
    // a global rule's key has its own gauges: in flight and the limit of the moment
    assertThat(meters.find("sluice.concurrency.key.in.flight")
        .tags("limiter", "backend", "key", "global").gauge().value()).isEqualTo(2);
    assertThat(meters.find("sluice.concurrency.key.limit")
        .tags("limiter", "backend", "key", "global").gauge().value()).isEqualTo(2);
    HttpResponse<String> third = get("/slow/" + gate());
    assertThat(third.statusCode()).isEqualTo(503);
    assertThat(third.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(third.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    assertThat(third.body()).contains("\"status\":503").contains("2 of 2 in flight")
        .contains("concurrency limit backend:")
        .contains("\"limit\":\"backend\",\"reason\":\"full\",\"inFlight\":2,\"max\":2");
    open(a);
    open(b);
    assertThat(first.get(10, TimeUnit.SECONDS).body()).isEqualTo("done " + a);
    assertThat(second.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // a permit goes back when the server sees its response end, which may be just after the
    // client has read the whole body: wait for that event (bounded), not for a time
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (backend.inFlight("global") != 0 && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertThat(backend.inFlight("global")).isZero();
    var refused = meters.find("sluice.concurrency.refused").tags("limiter", "backend", "reason",
        "full").functionCounter();
    assertThat(refused).isNotNull();
    assertThat(refused.count()).isGreaterThanOrEqualTo(1);
  }

  /**
   * A rule's flow from YAML (flow: header:X-Tenant) on a limit with fair queuing: three tenants
   * waiting behind a held request count as three flows, in the limiter's stats and in the
   * priority's meters, and all are served when the permit comes back.
   */
  @Test
  void aRulesFlow_reachesTheLimitsFairQueuing_andItsMeters() throws Exception {
    ConcurrencyLimiter tenants = limiters.concurrency("tenants");
    String first = gate();
    CompletableFuture<HttpResponse<String>> held = held("/fair/" + first, "X-Tenant", "a");
    java.util.List<CompletableFuture<HttpResponse<String>>> waiting = new java.util.ArrayList<>();
    java.util.List<String> gates = new java.util.ArrayList<>();
    for (String tenant : java.util.List.of("b", "c", "d")) {
      String g = gate();
      gates.add(g);
      waiting.add(HTTP.sendAsync(request("/fair/" + g, "X-Tenant", tenant),
          HttpResponse.BodyHandlers.ofString()));
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (tenants.waiting("global") < 3 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertThat(tenants.waiting("global")).isEqualTo(3);
    assertThat(tenants.stats().flows(dev.sluice.concurrency.Priority.NORMAL)).isBetween(2.9, 3.0);
    assertThat(meters.find("sluice.concurrency.priority.flows")
        .tags("limiter", "tenants", "priority", "normal").gauge().value()).isBetween(2.9, 3.0);
    assertThat(meters.find("sluice.concurrency.priority.waiting")
        .tags("limiter", "tenants", "priority", "normal").gauge().value()).isEqualTo(3);
    gates.forEach(ConcurrencyContract::open);
    open(first);
    assertThat(held.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    for (CompletableFuture<HttpResponse<String>> w : waiting) {
      assertThat(w.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    assertThat(meters.find("sluice.concurrency.priority.dispatched")
        .tags("limiter", "tenants", "priority", "normal").functionCounter().count())
        .isEqualTo(3);
    TestApp.ARRIVED.drainPermits();   // the waiters' arrivals: no other test's to read
  }

  /**
   * Issue 44, item 7: a per-client rule keyed by a header, and a request without it: 400 naming
   * the limit (sluice.missing-key's default, reject, as for rate rules), not one shared key.
   */
  @Test
  void aRequestWithoutTheClientsHeader_isAnswered400_namingTheLimit() throws Exception {
    HttpResponse<String> none = get("/open");
    assertThat(none.statusCode()).isEqualTo(400);
    assertThat(none.body()).contains("the concurrency limit per-client of rule /open")
        .contains("\"reason\":\"missing_key\"");
    assertThat(get("/open", "X-Client", "a").statusCode()).isEqualTo(200);
    assertThat(limiters.concurrency("per-client").inFlight("shared:no-key")).isZero();
  }

  /** The rules read grpc-timeout by default: a value that is no deadline is answered 400. */
  @Test
  void aDeadlineThatCannotBeRead_isAnswered400_namingTheHeader() throws Exception {
    HttpResponse<String> bad = get("/slow/" + gate(), "grpc-timeout", "soon");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("header grpc-timeout").contains("'soon'");
    assertThat(limiters.concurrency("backend").inFlight("global")).isZero();
  }

  @Test
  void aSheddableRequest_isRefusedPastItsShare_whileANormalOnePasses() throws Exception {
    String a = gate();
    CompletableFuture<HttpResponse<String>> first = held("/slow/" + a);
    HttpResponse<String> shed = get("/slow/" + gate(), "X-Priority", "sheddable");
    assertThat(shed.statusCode()).isEqualTo(503);
    assertThat(shed.body()).contains("this priority's share is in use");
    String b = gate();
    CompletableFuture<HttpResponse<String>> normal = held("/slow/" + b, "X-Priority", "normal");
    open(a);
    open(b);
    assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(normal.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  @Test
  void aConcurrencyLimitedMethod_holdsItsPermitWhileItRuns_andRefusesWith503() throws Exception {
    String a = gate();
    CompletableFuture<HttpResponse<String>> running = held("/exports/" + a);
    HttpResponse<String> refused = get("/exports/" + gate());
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(refused.body()).contains("\"status\":503").contains("1 of 1 in flight");
    open(a);
    assertThat(running.get(10, TimeUnit.SECONDS).body()).isEqualTo("done " + a);
    String b = gate();
    CompletableFuture<HttpResponse<String>> next = held("/exports/" + b);
    open(b);
    assertThat(next.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  /** Per key: the same tenant's second call is refused (429), another tenant's is not. */
  @Test
  void aMethodLimitedPerKey_refusesTheSameKeysSecondCall_andReleasesOnException() {
    assertThatThrownBy(() -> reports.perTenant("t1", () -> reports.perTenant("t1", () -> "inner")))
        .isInstanceOf(ConcurrencyLimitExceededException.class)
        .satisfies(e -> assertThat(((ConcurrencyLimitExceededException) e).problem().status())
            .isEqualTo(429));
    assertThat(reports.perTenant("t1", () -> reports.perTenant("t2", () -> "other tenant")))
        .isEqualTo("other tenant");
    assertThatThrownBy(() -> reports.perTenant("t1", () -> {
      throw new IllegalStateException("the export failed");
    })).hasMessage("the export failed");
    assertThat(limiters.concurrency("exports").inFlight("t1")).isZero();
  }

  /** With both annotations the rate limit decides first: its refusal takes no permit. */
  @Test
  void bothAnnotations_theRateLimitDecidesFirst() {
    String user = UUID.randomUUID().toString();
    for (int i = 0; i < 4; i++) {   // the reports policy holds 4
      assertThat(reports.both(user)).isEqualTo("both for " + user);
    }
    var held = limiters.concurrency("exports").tryAcquire("both:" + user).permit();
    assertThatThrownBy(() -> reports.both(user)).isInstanceOf(RateLimitExceededException.class);
    held.close();
    assertThat(limiters.concurrency("exports").inFlight("both:" + user)).isZero();
  }
}

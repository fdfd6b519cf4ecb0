package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.CircuitBreakerSettings;
import dev.sluice.StoreFailure;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.PermitEnd;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code /v1/permits} over real HTTP: acquire, renew and release by permit id, a refusal that
 * says why, an unknown or ended permit answered 404 as a problem document, bad requests named,
 * and the figures in {@code /metrics}.
 */
class PermitEndpointTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final HttpClient http = HttpClient.newHttpClient();
  private SluiceServer server;

  @TempDir
  Path dir;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void start(String lease) throws Exception {
    start(lease, new Options());
  }

  private void start(String lease, Options options) throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          db: {limit: 2, lease: %s, shares: {sheddable: 0.5}}
          tenants: {group: {limit: 3, assuredKeys: {acme/live: 2}, reserve: 2, key: prefix}}
        """.formatted(lease));
    server = SluiceServer.start(options.port(0).config(file));
  }

  private HttpResponse<String> send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
        + path)).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> acquire(String body) throws Exception {
    return send("POST", "/v1/permits", body);
  }

  private static JsonNode json(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body());
  }

  @Test
  void acquireRenewRelease_byPermitId_andAFullLimitSaysWhy() throws Exception {
    start("30s");
    HttpResponse<String> one = acquire("{\"limit\":\"db\",\"key\":\"orders\"}");
    assertThat(one.statusCode()).isEqualTo(200);
    JsonNode first = json(one);
    assertThat(first.get("acquired").asBoolean()).isTrue();
    assertThat(first.get("inFlight").asInt()).isEqualTo(1);
    assertThat(first.get("max").asInt()).isEqualTo(2);
    assertThat(first.get("leaseMs").asLong()).isEqualTo(30_000);
    String id = first.get("permit").asText();
    assertThat(id).matches("[0-9a-f]{32}");
    HttpResponse<String> two = acquire("{\"limit\":\"db\",\"key\":\"orders\",\"weight\":1}");
    assertThat(two.statusCode()).isEqualTo(200);
    HttpResponse<String> full = acquire("{\"limit\":\"db\",\"key\":\"orders\"}");
    assertThat(full.statusCode()).isEqualTo(429);
    assertThat(full.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(full.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    JsonNode refused = json(full);
    assertThat(refused.get("type").asText()).isEqualTo("urn:sluice:problem:no-permit");
    assertThat(refused.get("reason").asText()).isEqualTo("full");
    assertThat(refused.get("inFlight").asInt()).isEqualTo(2);
    assertThat(acquire("{\"limit\":\"db\",\"key\":\"other\"}").statusCode()).isEqualTo(200);

    HttpResponse<String> renewed = send("POST", "/v1/permits/" + id + "/renew", null);
    assertThat(renewed.statusCode()).isEqualTo(200);
    assertThat(json(renewed).get("renewed").asBoolean()).isTrue();
    assertThat(get("/metrics")).contains("sluice_concurrency_in_flight{limit=\"db\"} 3")
        .contains("sluice_concurrency_refused_total{limit=\"db\",reason=\"full\"} 1")
        .contains("sluice_concurrency_permits_held 3")
        .contains("sluice_concurrency_key_limit{limit=\"db\",key=\"orders\"} 2")
        .contains("sluice_concurrency_key_limit{limit=\"db\",key=\"other\"} 2");

    HttpResponse<String> released = send("DELETE", "/v1/permits/" + id + "?outcome=dropped", null);
    assertThat(released.statusCode()).isEqualTo(200);
    assertThat(json(released).get("released").asBoolean()).isTrue();
    HttpResponse<String> again = send("DELETE", "/v1/permits/" + id, null);
    assertThat(again.statusCode()).isEqualTo(404);
    assertThat(json(again).get("type").asText()).isEqualTo("urn:sluice:problem:unknown-permit");
    assertThat(send("POST", "/v1/permits/" + id + "/renew", null).statusCode()).isEqualTo(404);
    assertThat(send("DELETE", "/v1/permits/0123", null).statusCode()).isEqualTo(404);
    assertThat(acquire("{\"limit\":\"db\",\"key\":\"orders\"}").statusCode()).isEqualTo(200);
    assertThat(get("/metrics"))
        .contains("sluice_concurrency_ended_total{limit=\"db\",outcome=\"dropped\"} 1");
  }

  private String get(String path) throws Exception {
    return send("GET", path, null).body();
  }

  /** The section is read at start: a reload that changes it leaves the limits as they were. */
  @Test
  void aReload_leavesTheConcurrencyLimitsAsTheyWere() throws Exception {
    start("30s");
    Files.writeString(dir.resolve("sluice.yaml"), """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          db: {limit: 5}
        """);
    server.reload();
    acquire("{\"limit\":\"db\",\"key\":\"k\"}");
    acquire("{\"limit\":\"db\",\"key\":\"k\"}");
    assertThat(json(acquire("{\"limit\":\"db\",\"key\":\"k\"}")).get("max").asInt())
        .isEqualTo(2);
  }

  @Test
  void sheddableRequests_areShedPastTheirShare() throws Exception {
    start("30s");
    assertThat(acquire("{\"limit\":\"db\",\"key\":\"k\",\"priority\":\"sheddable\"}")
        .statusCode()).isEqualTo(200);
    HttpResponse<String> shed = acquire("{\"limit\":\"db\",\"key\":\"k\",\"priority\":\"sheddable\"}");
    assertThat(shed.statusCode()).isEqualTo(429);
    assertThat(json(shed).get("reason").asText()).isEqualTo("shed");
    assertThat(acquire("{\"limit\":\"db\",\"key\":\"k\",\"priority\":\"critical\"}")
        .statusCode()).isEqualTo(200);
  }

  /** A permit whose lease ended is gone: its release is a clear 404, and its weight is back. */
  @Test
  void aPermitWhoseLeaseEnded_isUnknown() throws Exception {
    start("100ms");
    String id = json(acquire("{\"limit\":\"db\",\"key\":\"k\"}")).get("permit").asText();
    acquire("{\"limit\":\"db\",\"key\":\"k\"}");
    long deadline = System.nanoTime() + 10_000_000_000L;
    int status = 0;
    while (System.nanoTime() < deadline) {   // real time: the service's clock is the system's
      status = acquire("{\"limit\":\"db\",\"key\":\"k\"}").statusCode();
      if (status == 200) {
        break;   // the two leases ended: their weight came back
      }
      Thread.sleep(20);
    }
    assertThat(status).isEqualTo(200);
    assertThat(send("POST", "/v1/permits/" + id + "/renew", null).statusCode()).isEqualTo(404);
    assertThat(send("DELETE", "/v1/permits/" + id, null).statusCode()).isEqualTo(404);
  }

  /** A flood of new keys: the permit ids held are bounded, past the bound the answer is 503. */
  @Test
  void aFloodOfNewKeys_isBounded() throws Exception {
    start("1h", new Options().maximumKeys(50));
    int ok = 0;
    int refused = 0;
    for (int i = 0; i < 80; i++) {
      HttpResponse<String> r = acquire("{\"limit\":\"db\",\"key\":\"flood-" + i + "\"}");
      if (r.statusCode() == 200) {
        ok++;
      } else {
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.body()).contains("holds its maximum of 50 permits");
        refused++;
      }
    }
    assertThat(ok).isEqualTo(50);
    assertThat(refused).isEqualTo(30);
    assertThat(get("/metrics")).contains("sluice_concurrency_permits_held 50");
  }

  @Test
  void badRequests_areNamed() throws Exception {
    start("30s");
    assertThat(problem(acquire("{\"limit\":\"nope\",\"key\":\"k\"}"), 400))
        .contains("no concurrency limit 'nope'").contains("[db, tenants]");
    assertThat(problem(acquire("{\"limit\":\"db\"}"), 400)).contains("'key' must be a non-empty");
    assertThat(problem(acquire("{\"limit\":\"db\",\"key\":\"k\",\"cost\":2}"), 400))
        .contains("unknown field 'cost'");
    assertThat(problem(acquire("{\"limit\":\"db\",\"key\":\"k\",\"priority\":\"vip\"}"), 400))
        .contains("'priority' must be critical, normal or sheddable but was 'vip'");
    assertThat(problem(acquire("{\"limit\":\"db\",\"key\":\"k\",\"weight\":0}"), 400))
        .contains("'weight' must be a whole number from 1");
    assertThat(problem(acquire("{\"limit\":\"db\",\"key\":\"k\",\"weight\":3}"), 429))
        .contains("the request weighs more than the limit");
    assertThat(problem(acquire("not json"), 400)).contains("not JSON");
    assertThat(problem(send("DELETE", "/v1/permits/abc?outcome=maybe", null), 400))
        .contains("outcome must be success, dropped or ignored but was 'maybe'");
    assertThat(send("GET", "/v1/permits", null).statusCode()).isEqualTo(405);
    assertThat(send("GET", "/v1/permits/abc", null).statusCode()).isEqualTo(405);
  }

  private static String problem(HttpResponse<String> r, int status) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    return r.body();
  }

  @Test
  void aBadConcurrencySection_failsStartup_namingTheLine() throws Exception {
    try {
      Policies.parse("p.yaml", """
          policies:
            api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          concurrency:
            db: {limit: 0, lease: soon, shares: {vip: 0.5, sheddable: 2}}
            pool: {lease: 1s}
          """);
      throw new AssertionError("a bad concurrency section was accepted");
    } catch (ConfigException e) {
      assertThat(e.problems()).containsExactlyInAnyOrder(
          "p.yaml:4: concurrency 'db': 'limit' must be a whole number from 1 to 2147483647 but"
              + " was '0'",
          "p.yaml:4: concurrency 'db': 'lease' must be a duration such as 250ms, 30s, 5m, 1h or"
              + " 1d but was 'soon'",
          "p.yaml:4: concurrency 'db': unknown priority 'vip' (expected critical, normal or"
              + " sheddable)",
          "p.yaml:4: concurrency 'db': the share of sheddable must be between 0 and 1 but was"
              + " '2'",
          "p.yaml:5: concurrency 'pool': 'limit' is missing (the most permits in flight per key,"
              + " or adaptive: gradient)");
    }
  }

  /** /metrics gives the limit of the last 20 keys asked for per limit: a bounded set of series. */
  @Test
  void theKeyLimitSeries_areTheLastKeysAskedFor_andBounded() throws Exception {
    start("30s");
    for (int i = 0; i < PermitEndpoint.METERED_KEYS + 5; i++) {
      assertThat(acquire("{\"limit\":\"db\",\"key\":\"k" + i + "\"}").statusCode())
          .isEqualTo(200);
    }
    String metrics = get("/metrics");
    assertThat(metrics.lines().filter(l -> l.startsWith("sluice_concurrency_key_limit{")))
        .hasSize(PermitEndpoint.METERED_KEYS)
        .contains("sluice_concurrency_key_limit{limit=\"db\",key=\"k24\"} 2")
        .doesNotContain("sluice_concurrency_key_limit{limit=\"db\",key=\"k0\"} 2");
  }

  /** An adaptive limit from the policies file: it starts at initialLimit; bad ones are named. */
  @Test
  void anAdaptiveConcurrencyLimit_isRead_andBadOnesNamed() throws Exception {
    Policies p = Policies.parse("p.yaml", """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          db: {adaptive: gradient, initialLimit: 3, maxLimit: 500}
        """);
    ConcurrencyLimiter db = PermitEndpoint.limiters(p, null, StoreFailure.FAIL_CLOSED,
        CircuitBreakerSettings.defaults()).get("db");
    assertThat(db.limit("k")).isEqualTo(3);
    for (int i = 0; i < 3; i++) {
      assertThat(db.tryAcquire("k").isAcquired()).isTrue();
    }
    assertThat(db.tryAcquire("k").isAcquired()).isFalse();
    try {
      Policies.parse("p.yaml", """
          policies:
            api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          concurrency:
            a: {adaptive: vegas}
            b: {adaptive: aimd, limit: 4}
            c: {adaptive: gradient, minLimit: 9, maxLimit: 5}
          """);
      throw new AssertionError("a bad adaptive limit was accepted");
    } catch (ConfigException e) {
      assertThat(e.problems()).containsExactlyInAnyOrder(
          "p.yaml:4: concurrency 'a': 'adaptive' must be none, gradient or aimd but was 'vegas'",
          "p.yaml:4: concurrency 'a': 'limit' is missing (the most permits in flight per key, or"
              + " adaptive: gradient)",
          "p.yaml:5: concurrency 'b': 'limit' and 'adaptive: aimd' exclude each other (bound an"
              + " adaptive limit with minLimit and maxLimit)",
          "p.yaml:6: concurrency 'c': 'minLimit' (9) is above 'maxLimit' (5)");
    }
  }

  /**
   * Issue 44, item 7: a concurrency limit without maxWaiters lets as many wait per key as the
   * library and the starter do (100), not none.
   */
  @Test
  void maxWaiters_defaultsToTheLibrarys() throws Exception {
    Policies p = Policies.parse("p.yaml", """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          db: {limit: 1}
        """);
    assertThat(p.concurrency().get("db").maxWaiters())
        .isEqualTo(ConcurrencyLimiter.DEFAULT_MAX_WAITERS).isEqualTo(100);
    ConcurrencyLimiter l = PermitEndpoint.limiters(p, null, StoreFailure.FAIL_CLOSED,
        CircuitBreakerSettings.defaults()).get("db");
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = l.acquireAsync("k", 1, Duration.ofSeconds(30));
    assertThat(l.waiting("k")).as("it waits, not refused QUEUE_FULL").isEqualTo(1);
    held.close();
    assertThat(waiting.get(10, TimeUnit.SECONDS).isAcquired()).isTrue();
    l.close();
  }

  /**
   * Issue 44, item 3: /metrics shows an adaptive limit's estimates for the keys last asked for,
   * once measured, and nothing for a fixed limit.
   */
  @Test
  void metrics_showAnAdaptiveLimitsEstimates() {
    ConcurrencyLimiter adaptive = ConcurrencyLimiter.builder().adaptive(() -> new AdaptiveLimit() {
      @Override
      public int limit() {
        return 7;
      }

      @Override
      public void onEnd(PermitEnd end, long nowNanos) {}

      @Override
      public double noLoadLatencyNanos() {
        return 49e6;
      }

      @Override
      public double gradient() {
        return 0.8;
      }
    }).build();
    ConcurrencyLimiter fixed = ConcurrencyLimiter.builder().limit(2).build();
    adaptive.tryAcquire("orders").permit().close();
    fixed.tryAcquire("orders").permit().close();
    String text = Metrics.concurrency(Map.of("search", adaptive, "db", fixed), 0,
        Map.of("search", List.of("orders"), "db",
            List.of("orders")));
    assertThat(text).contains(
        "sluice_concurrency_key_no_load_latency_seconds{limit=\"search\",key=\"orders\"} 0.049\n",
        "sluice_concurrency_key_gradient{limit=\"search\",key=\"orders\"} 0.8\n")
        .doesNotContain("sluice_concurrency_key_gradient{limit=\"db\"");
  }

  /**
   * Issue 44, item 1, for the service: a client that waits for a permit and goes away (a reset)
   * before it is granted holds nothing once the grant cannot be delivered to it. (A client that
   * closes with a FIN is silent over HTTP/1.1 until a write fails, and a first write after it may
   * succeed: see the notes.)
   */
  @Test
  void aWaiterThatWentAway_holdsNothing() throws Exception {
    start("1h");
    String holder = json(acquire("{\"limit\":\"db\",\"key\":\"gone\",\"weight\":2}"))
        .get("permit").asText();
    String body = "{\"limit\":\"db\",\"key\":\"gone\",\"waitMs\":20000}";
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
      s.getOutputStream().write(("POST /v1/permits HTTP/1.1\r\nHost: x\r\nContent-Length: "
          + body.length() + "\r\n\r\n" + body).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!get("/metrics").contains("sluice_concurrency_permits_held 2")
          && System.nanoTime() < end) {
        Thread.sleep(10);   // the waiter's id slot is reserved once its body is read
      }
      s.setSoLinger(true, 0);   // it goes away with a reset, as a client that timed out
    }
    assertThat(send("DELETE", "/v1/permits/" + holder, null).statusCode()).isEqualTo(200);
    // the id slot and the limiter's weight come back on two threads, in either order (the
    // client's reset, the grant to a wait already cancelled): both, within the bound
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    String metrics = get("/metrics");
    while (!(metrics.contains("sluice_concurrency_permits_held 0")
        && metrics.contains("sluice_concurrency_in_flight{limit=\"db\"} 0"))
        && System.nanoTime() < end) {
      Thread.sleep(10);
      metrics = get("/metrics");
    }
    assertThat(metrics).contains("sluice_concurrency_permits_held 0")
        .contains("sluice_concurrency_in_flight{limit=\"db\"} 0");
    assertThat(acquire("{\"limit\":\"db\",\"key\":\"gone\",\"weight\":2}").statusCode())
        .isEqualTo(200);
  }

  /**
   * Fair queuing from the policies file ({@code fair: {...}}), a request's {@code flow} in the
   * body, and the per-priority series in /metrics: three tenants waiting count as three flows;
   * a flow that is not a string, and bad fair settings, are named.
   */
  @Test
  void fairQueuing_fromThePoliciesFile_withTheRequestsFlow() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          shared: {limit: 1, fair: {queues: 64, handSize: 4, memory: 30s}}
        """);
    server = SluiceServer.start(new Options().port(0).config(file));
    String holder = json(acquire("{\"limit\":\"shared\",\"key\":\"db\",\"flow\":\"a\"}"))
        .get("permit").asText();
    List<CompletableFuture<HttpResponse<String>>> waits =
        new java.util.ArrayList<>();
    HttpClient http1 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    for (String tenant : List.of("b", "c", "d")) {
      waits.add(http1.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + server.port() + "/v1/permits")).POST(HttpRequest.BodyPublishers.ofString(
          "{\"limit\":\"shared\",\"key\":\"db\",\"flow\":\"" + tenant
              + "\",\"waitMs\":60000}")).build(), HttpResponse.BodyHandlers.ofString()));
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!get("/metrics").contains(
        "sluice_concurrency_priority_waiting{limit=\"shared\",priority=\"normal\"} 3")
        && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    String metrics = get("/metrics");
    assertThat(metrics).contains(
        "sluice_concurrency_priority_waiting{limit=\"shared\",priority=\"normal\"} 3")
        .contains("sluice_concurrency_priority_flows{limit=\"shared\",priority=\"sheddable\"} 0");
    java.util.regex.Matcher flows = java.util.regex.Pattern.compile(
        "sluice_concurrency_priority_flows\\{limit=\"shared\",priority=\"normal\"} ([0-9.]+)")
        .matcher(metrics);
    assertThat(flows.find()).isTrue();
    assertThat(Double.parseDouble(flows.group(1))).as("three tenants").isBetween(2.9, 3.0);
    assertThat(send("DELETE", "/v1/permits/" + holder, null).statusCode()).isEqualTo(200);
    // served one at a time, in the order they arrived (which the async sends do not fix):
    // each permit is released as its answer comes, and the next waiter gets it
    List<CompletableFuture<HttpResponse<String>>> left = new java.util.ArrayList<>(waits);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!left.isEmpty() && System.nanoTime() < deadline) {
      CompletableFuture<HttpResponse<String>> done = left.stream().filter(CompletableFuture::isDone)
          .findFirst().orElse(null);
      if (done == null) {
        Thread.sleep(5);
        continue;
      }
      left.remove(done);
      JsonNode got = json(done.join());
      assertThat(got.get("acquired").asBoolean()).as(got.toString()).isTrue();
      assertThat(send("DELETE", "/v1/permits/" + got.get("permit").asText(), null).statusCode())
          .isEqualTo(200);
    }
    assertThat(left).as("every waiter served").isEmpty();
    assertThat(get("/metrics")).contains(
        "sluice_concurrency_priority_dispatched_total{limit=\"shared\",priority=\"normal\"} 3");
    HttpResponse<String> bad = acquire("{\"limit\":\"shared\",\"key\":\"db\",\"flow\":3}");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(json(bad).get("detail").asText()).isEqualTo("'flow' must be a non-empty string but"
        + " was 3");
    try {
      Policies.parse("p.yaml", """
          policies:
            api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          concurrency:
            a: {limit: 1, fair: {queues: 0, hands: 2}}
          """);
      throw new AssertionError("bad fair settings were accepted");
    } catch (ConfigException e) {
      assertThat(e.problems()).containsExactlyInAnyOrder(
          "p.yaml:4: concurrency 'a': unknown key 'fair.hands' (expected one of fair.handSize,"
              + " fair.memory, fair.queueLength, fair.queues)",
          "p.yaml:4: concurrency 'a': 'fair.queues' must be a whole number from 1 to 65536 but"
              + " was '0'");
    }
  }

  /** CoDel from the policies file: both settings or neither; out of order named. */
  @Test
  void codel_isRead_andBadSettingsNamed() throws Exception {
    Policies p = Policies.parse("p.yaml", """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        concurrency:
          db: {limit: 2, maxWaiters: 10, codelTarget: 5ms, codelInterval: 100ms}
        """);
    assertThat(p.concurrency().get("db").codelTarget()).isEqualTo(Duration.ofMillis(5));
    assertThat(p.concurrency().get("db").codelInterval()).isEqualTo(Duration.ofMillis(100));
    assertThat(PermitEndpoint.limiters(p, null, StoreFailure.FAIL_CLOSED,
        CircuitBreakerSettings.defaults()).get("db").tryAcquire("k").isAcquired()).isTrue();
    try {
      Policies.parse("p.yaml", """
          policies:
            api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          concurrency:
            a: {limit: 1, codelTarget: 5ms}
            b: {limit: 1, codelTarget: 1s, codelInterval: 100ms}
          """);
      throw new AssertionError("a bad CoDel setting was accepted");
    } catch (ConfigException e) {
      assertThat(e.problems()).containsExactlyInAnyOrder(
          "p.yaml:4: concurrency 'a': CoDel needs both 'codelTarget' and 'codelInterval' (such"
              + " as 5ms and 100ms)",
          "p.yaml:5: concurrency 'b': CoDel needs 0 < codelTarget <= codelInterval <= 1m but"
              + " codelTarget was '1s' and codelInterval '100ms'");
    }
  }

  /**
   * A concurrency limit whose keys are partitions of groups (by prefix): acme/live is assured 2,
   * acme/batch borrows up to limit - reserve = 1 and says so; a key with no group is a 400 naming
   * it; bad group settings are named by line.
   */
  @Test
  void aGroupedConcurrencyLimit_assuresAndLends_overHttp() throws Exception {
    start("30s");
    JsonNode batch = json(acquire("{\"limit\":\"tenants\",\"key\":\"acme/batch\"}"));
    assertThat(batch.get("acquired").asBoolean()).isTrue();
    assertThat(batch.get("borrowed").asBoolean()).isTrue();
    assertThat(acquire("{\"limit\":\"tenants\",\"key\":\"acme/batch\"}").statusCode())
        .as("a second borrow would pass limit - reserve").isEqualTo(429);
    for (int i = 0; i < 2; i++) {
      JsonNode live = json(acquire("{\"limit\":\"tenants\",\"key\":\"acme/live\"}"));
      assertThat(live.get("acquired").asBoolean()).isTrue();
      assertThat(live.has("borrowed")).isFalse();
    }
    HttpResponse<String> none = acquire("{\"limit\":\"tenants\",\"key\":\"nogroup\"}");
    assertThat(none.statusCode()).isEqualTo(400);
    assertThat(json(none).get("detail").asText()).contains("key 'nogroup' has no group");
    assertThat(get("/metrics")).contains("sluice_concurrency_permits_held 3");
    try {
      Policies.parse("p.yaml", """
          policies:
            api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          concurrency:
            a: {group: {assured: 2}}
            b: {group: {limit: 4, assured: 5, key: hash, separator: ":"}}
            c: {adaptive: gradient, group: {limit: 4}}
          """);
      throw new AssertionError("a bad group was accepted");
    } catch (ConfigException e) {
      assertThat(e.problems()).containsExactlyInAnyOrder(
          "p.yaml:4: concurrency 'a': 'group.limit' is missing (the permits in flight the"
              + " group's keys hold at most, together)",
          "p.yaml:5: concurrency 'b': 'group.assured' must be a whole number from 0 to 4 but"
              + " was '5'",
          "p.yaml:5: concurrency 'b': 'group.key' must be all or prefix but was 'hash'",
          "p.yaml:5: concurrency 'b': 'group.separator' applies with 'group.key: prefix'",
          "p.yaml:6: concurrency 'c': adaptive limits and groups do not combine yet (a group's"
              + " keys share a fixed limit)");
    }
  }
}

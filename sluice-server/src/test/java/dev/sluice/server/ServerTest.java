package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The service over real HTTP, with the in-memory store. */
class ServerTest {
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

  private String base() {
    return "http://127.0.0.1:" + server.port();
  }

  private HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base() + path))
        .POST(HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json");
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private void startSample() throws Exception {
    server = SluiceServer.start(new Options().port(0));
  }

  @Test
  void singleCheck_admitsThenAnswers429WithHeaders() throws Exception {
    startSample();
    HttpResponse<String> first = post("/v1/check", "{\"policy\":\"demo\",\"key\":\"alice\"}");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"demo\";q=1;w=10");
    assertThat(first.headers().firstValue("RateLimit")).hasValue("\"demo\";r=0;t=10");
    JsonNode one = JSON.readTree(first.body());
    assertThat(one.get("allowed").asBoolean()).isTrue();
    assertThat(one.get("remaining").asDouble()).isEqualTo(0.0);
    HttpResponse<String> second = post("/v1/check", "{\"policy\":\"demo\",\"key\":\"alice\"}");
    assertThat(second.statusCode()).isEqualTo(429);
    assertThat(second.headers().firstValue("Retry-After")).hasValue("10");
    JsonNode two = JSON.readTree(second.body());
    assertThat(two.get("allowed").asBoolean()).isFalse();
    assertThat(two.get("retryAfterSeconds").asDouble()).isBetween(9.0, 10.0);
    assertThat(two.at("/headers/Retry-After").asText()).isEqualTo("10");
    assertThat(two.at("/headers/RateLimit").asText()).isEqualTo("\"demo\";r=0;t=10");
    assertThat(post("/v1/check", "{\"policy\":\"demo\",\"key\":\"bob\"}").statusCode()).isEqualTo(200);
  }

  @Test
  void shedCpu_refusesSheddableChecksFast_criticalOnesRun() throws Exception {
    java.util.concurrent.atomic.AtomicReference<Double> cpu =
        new java.util.concurrent.atomic.AtomicReference<>(0.0);
    java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
    Options o = new Options().port(0);
    o.health = dev.sluice.health.HealthShedder.builder()
        .signal(dev.sluice.health.HealthSignal.of("cpu", cpu::get), 0.90, 0.98)
        .clock(now::get).guard(false).build();
    server = SluiceServer.start(o);
    String check = "{\"policy\":\"demo\",\"key\":\"k%s\"}";
    assertThat(post("/v1/check", String.format(check, 1), "X-Priority", "sheddable").statusCode())
        .isEqualTo(200);
    cpu.set(0.99);
    now.addAndGet(1_000_000_000L);
    HttpResponse<String> shed = post("/v1/check", String.format(check, 2), "X-Priority",
        "sheddable");
    assertThat(shed.statusCode()).isEqualTo(503);
    assertThat(shed.headers().firstValue("Retry-After")).hasValue("1");
    JsonNode problem = JSON.readTree(shed.body());
    assertThat(problem.get("type").asText()).isEqualTo("urn:sluice:problem:shedding");
    assertThat(problem.get("title").asText()).isEqualTo("Shedding load");
    assertThat(problem.get("detail").asText()).startsWith("shedding load: shed: cpu at 0.99"
        + " (sheds SHEDDABLE from 0.90");
    assertThat(post("/v1/check", String.format(check, 3)).statusCode())
        .as("normal, at full pressure").isEqualTo(503);
    assertThat(post("/v1/check", String.format(check, 4), "X-Priority", "critical").statusCode())
        .isEqualTo(200);
    // a check's admission ends once its answer is written, which the client may read first
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (o.health.inFlight() > 0 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(o.health.inFlight()).as("every admitted check ended").isZero();
    assertThatThrownBy(() -> new Options().shedCpu(0.98, 0.9))
        .hasMessage("shedCpu needs 0 < start < full <= 1 but was start 0.98, full 0.9");
  }

  /**
   * The service's own shedder guards every endpoint that takes work: a permit's acquisition is
   * shed like a check (renewals and releases never are: they keep or free what is held), and a
   * call of Envoy's gRPC service ends UNAVAILABLE naming the signal, with gRPC's retry pushback,
   * at the priority of its x-priority metadata; the gRPC health service is never shed.
   */
  @Test
  void shedCpu_shedsPermitAcquisitionsAndEnvoysCalls_neverReleasesOrHealth() throws Exception {
    java.util.concurrent.atomic.AtomicReference<Double> cpu =
        new java.util.concurrent.atomic.AtomicReference<>(0.0);
    java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
    Path file = dir.resolve("shed.yaml");
    Files.writeString(file, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 10, rate: 1/s}
        concurrency:
          db: {limit: 5, lease: 30s}
        """);
    Path envoy = dir.resolve("edge.yaml");
    Files.writeString(envoy, String.join("\n", "domain: edge", "descriptors:",
        "  - key: remote_address", "    rate_limit: {unit: hour, requests_per_unit: 100}", ""));
    Options o = new Options().port(0).config(file).grpcPort(0).envoyConfig(envoy);
    o.health = dev.sluice.health.HealthShedder.builder()
        .signal(dev.sluice.health.HealthSignal.of("cpu", cpu::get), 0.90, 0.98)
        .clock(now::get).guard(false).build();
    server = SluiceServer.start(o);
    HttpResponse<String> held = post("/v1/permits", "{\"limit\": \"db\", \"key\": \"k\"}");
    assertThat(held.statusCode()).isEqualTo(200);
    String id = JSON.readTree(held.body()).get("permit").asText();
    io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
        .forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
    try {
      var stub = io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc
          .newBlockingStub(channel).withDeadlineAfter(10, java.util.concurrent.TimeUnit.SECONDS);
      var request = io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
          .setDomain("edge").addDescriptors(io.envoyproxy.envoy.extensions.common.ratelimit.v3
              .RateLimitDescriptor.newBuilder().addEntries(io.envoyproxy.envoy.extensions.common
                  .ratelimit.v3.RateLimitDescriptor.Entry.newBuilder().setKey("remote_address")
                  .setValue("10.1.1.1"))).build();
      assertThat(stub.shouldRateLimit(request).getOverallCode().name()).isEqualTo("OK");
      cpu.set(0.99);
      now.addAndGet(1_000_000_000L);
      HttpResponse<String> shed = post("/v1/permits", "{\"limit\": \"db\", \"key\": \"k\"}");
      assertThat(shed.statusCode()).isEqualTo(503);
      assertThat(shed.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(JSON.readTree(shed.body()).get("type").asText())
          .isEqualTo("urn:sluice:problem:shedding");
      assertThat(post("/v1/permits/" + id + "/renew", "").statusCode()).as("renewals run")
          .isEqualTo(200);
      io.grpc.StatusRuntimeException refused = org.junit.jupiter.api.Assertions.assertThrows(
          io.grpc.StatusRuntimeException.class, () -> stub.shouldRateLimit(request));
      assertThat(refused.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.UNAVAILABLE);
      assertThat(refused.getStatus().getDescription())
          .startsWith("shedding load: shed: cpu at 0.99 (sheds NORMAL from 0.90");
      assertThat(refused.getTrailers().get(GrpcEndpoint.Shedding.PUSHBACK)).isEqualTo("1000");
      io.grpc.Metadata critical = new io.grpc.Metadata();
      critical.put(GrpcEndpoint.Shedding.PRIORITY, "critical");
      assertThat(stub.withInterceptors(io.grpc.stub.MetadataUtils
              .newAttachHeadersInterceptor(critical)).shouldRateLimit(request).getOverallCode()
          .name()).as("critical calls run").isEqualTo("OK");
      assertThat(io.grpc.health.v1.HealthGrpc.newBlockingStub(channel)
          .check(io.grpc.health.v1.HealthCheckRequest.newBuilder().setService("ratelimit")
              .build()).getStatus().name()).isEqualTo("SERVING");
      HttpResponse<String> released = http.send(HttpRequest.newBuilder(URI.create(
          "http://127.0.0.1:" + server.port() + "/v1/permits/" + id)).DELETE().build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(released.statusCode()).as("releases run").isBetween(200, 204);
    } finally {
      channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (o.health.inFlight() > 0 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(o.health.inFlight()).as("every admitted call ended").isZero();
  }

  @Test
  void batch_everyModeAnswered() throws Exception {
    startSample();
    long sent = System.nanoTime();
    HttpResponse<String> r = post("/v1/check", """
        {"requests": [
          {"policy": "api", "key": "k", "cost": 4},
          {"policy": "api", "key": "k", "cost": 7, "mode": "peek"},
          {"policy": "api", "key": "k", "cost": 6, "mode": "enforce"},
          {"policy": "jobs", "key": "j", "cost": 20, "mode": "fill-up"},
          {"policy": "jobs", "key": "q", "mode": "reserve"},
          {"policy": "jobs", "key": "q", "mode": "reserve"}
        ]}""");
    // the server decides on its real clock: the buckets drain (api-burst 5/s, the reserve queue
    // 2/s) for as long as the batch takes, which a busy host makes milliseconds
    double took = (System.nanoTime() - sent) / 1e9;
    org.assertj.core.data.Offset<Double> drained =
        org.assertj.core.data.Offset.offset(0.01 + 5 * took);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode results = JSON.readTree(r.body()).get("results");
    assertThat(results).hasSize(6);
    assertThat(results.get(0).get("allowed").asBoolean()).isTrue();
    assertThat(results.get(1).get("allowed").asBoolean()).as("peek: 4 + 7 > 10").isFalse();
    assertThat(results.get(2).get("allowed").asBoolean()).as("the peek charged nothing").isTrue();
    assertThat(results.get(2).get("remaining").asDouble()).isCloseTo(0.0, drained);
    assertThat(results.get(2).at("/headers/RateLimit-Policy").asText())
        .isEqualTo("\"api-burst\";q=10;w=2, \"api-hourly\";q=1000;w=3600");
    assertThat(results.get(3).get("reachedCapacity").asBoolean()).isTrue();
    assertThat(results.get(4).get("delaySeconds").asDouble()).isZero();
    assertThat(results.get(5).get("delaySeconds").asDouble()).isCloseTo(0.5, drained);
    HttpResponse<String> array = post("/v1/check", "[{\"policy\":\"demo\",\"key\":\"x\"}]");
    assertThat(JSON.readTree(array.body()).get("results")).hasSize(1);
  }

  @Test
  void badInput_is400WithAProblem_never500() throws Exception {
    server = SluiceServer.start(new Options().port(0).maxBatch(3).maxKeyLength(10)
        .maxBodyBytes(1024));
    String[][] cases = {
        {"{\"policy\": \"demo\", \"key\": ", "400", "Malformed JSON", "line 1"},
        {"", "400", "empty", ""},
        {"\"just a string\"", "400", "must be a JSON object", ""},
        {"{\"policy\": \"nope\", \"key\": \"a\"}", "400", "no policy named 'nope'", "known: demo, api, jobs"},
        {"{\"key\": \"a\"}", "400", "policy: required", ""},
        {"{\"policy\": \"demo\"}", "400", "key: required", ""},
        {"{\"policy\": \"demo\", \"key\": \"\"}", "400", "key: required", ""},
        {"{\"policy\": \"demo\", \"key\": \"01234567890\"}", "400", "at most 10 characters", ""},
        {"{\"policy\": \"demo\", \"key\": 42}", "400", "key: required", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\", \"cost\": -1}", "400", "cost: must be a positive number but was -1", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\", \"cost\": 0}", "400", "cost: must be a positive number", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\", \"cost\": \"3\"}", "400", "cost: must be a positive number but was \\\"3\\\"", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\", \"cost\": 1e400}", "400", "cost: must be a positive number", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\", \"mode\": \"maybe\"}", "400", "mode: must be enforce, peek, fill-up or reserve", ""},
        {"{\"policy\": \"api\", \"key\": \"a\", \"mode\": \"reserve\"}", "400", "reserve needs bucket limits", ""},
        {"{\"policy\": \"demo\", \"kye\": \"a\"}", "400", "kye: unknown field", ""},
        {"{\"requests\": []}", "400", "non-empty array", ""},
        {"{\"requests\": [1]}", "400", "requests[0] must be a JSON object", ""},
        {"{\"requests\": [{\"policy\": \"demo\", \"key\": \"a\"}, {\"policy\": \"demo\", \"key\": \"a\", \"cost\": -2}]}", "400", "requests[1].cost", ""},
        {"[{},{},{},{}]", "400", "at most 3 requests but this one has 4", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\\u0000b\"}", "400", "key: must not contain U+0000 but was", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\\ud800\"}", "400", "key: must be well-formed Unicode but has a lone surrogate at index 1", ""},
        {"{\"policy\": \"demo\", \"key\": \"a\"} {}", "400", "Malformed JSON", ""},
        {"{\"policy\": \"demo\", \"key\": \"" + "x".repeat(2000) + "\"}", "413", "at most 1024", ""},
    };
    for (String[] c : cases) {
      HttpResponse<String> r = post("/v1/check", c[0]);
      assertThat(r.statusCode()).as(c[0]).isEqualTo(Integer.parseInt(c[1]));
      assertThat(r.headers().firstValue("Content-Type")).as(c[0]).hasValue("application/problem+json");
      assertThat(r.body()).as(c[0]).contains(c[2]).contains(c[3]).contains("\"status\":" + c[1]);
    }
    HttpResponse<String> wrongMethod = get("/v1/check");
    assertThat(wrongMethod.statusCode()).isEqualTo(405);
    assertThat(wrongMethod.headers().firstValue("Allow")).hasValue("POST");
    assertThat(get("/nowhere").statusCode()).isEqualTo(404);
    assertThat(get("/metrics").body()).doesNotContain("code=\"500\"");
  }

  @Test
  void bearerToken_requiredWhenConfigured() throws Exception {
    server = SluiceServer.start(new Options().port(0).token("s3cret-token-0123456789"));
    HttpResponse<String> none = post("/v1/check", "{\"policy\":\"demo\",\"key\":\"a\"}");
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    assertThat(post("/v1/check", "{\"policy\":\"demo\",\"key\":\"a\"}", "Authorization", "Bearer wrong")
        .statusCode()).isEqualTo(401);
    assertThat(post("/v1/check", "{\"policy\":\"demo\",\"key\":\"a\"}", "Authorization",
        "Bearer s3cret-token-0123456789").statusCode()).isEqualTo(200);
    assertThat(get("/healthz").statusCode()).as("probes stay open").isEqualTo(200);
    assertThatThrownBy(() -> new Options().token("short"))
        .hasMessageContaining("at least 16 characters");
  }

  @Test
  void healthReadinessAndMetrics() throws Exception {
    startSample();
    assertThat(get("/healthz").body()).isEqualTo("ok\n");
    assertThat(get("/readyz").statusCode()).isEqualTo(200);
    post("/v1/check", "{\"policy\":\"demo\",\"key\":\"m\"}");
    post("/v1/check", "{\"policy\":\"demo\",\"key\":\"m\"}");
    post("/v1/check", "{\"policy\":\"demo\",\"key\":\"m\",\"cost\":-1}");
    HttpResponse<String> m = get("/metrics");
    assertThat(m.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
    assertThat(m.body())
        .contains("sluice_decisions_total{policy=\"demo\",outcome=\"allowed\"} 1\n")
        .contains("sluice_decisions_total{policy=\"demo\",outcome=\"rejected\"} 1\n")
        .contains("sluice_decision_duration_seconds_count 2\n")
        .contains("sluice_decision_duration_seconds_bucket{le=\"+Inf\"} 2\n")
        .contains("sluice_store_errors_total{policy=\"demo\"} 0\n")
        .contains("sluice_http_responses_total{code=\"200\"} 3\n")   // healthz, readyz, one admit
        .contains("sluice_http_responses_total{code=\"400\"} 1\n")
        .contains("sluice_http_responses_total{code=\"429\"} 1\n");
  }

  @Test
  void configFile_reloadKeepsUnchangedPolicies_andRejectsABadFile() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, """
        policies:
          a: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          b: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
        """);
    server = SluiceServer.start(new Options().port(0).config(file).reloadEvery(Duration.ZERO));
    assertThat(post("/v1/check", "{\"policy\":\"a\",\"key\":\"k\"}").statusCode()).isEqualTo(200);
    assertThat(post("/v1/check", "{\"policy\":\"b\",\"key\":\"k\"}").statusCode()).isEqualTo(200);
    Files.writeString(file, """
        policies:
          a: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          b: {algorithm: leaky-bucket, capacity: 3, rate: 1/1h}
          c: {algorithm: fixed-window, limit: 2, window: 1m}
        """);
    server.reload();
    assertThat(server.policyNames()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(post("/v1/check", "{\"policy\":\"a\",\"key\":\"k\"}").statusCode())
        .as("unchanged policy keeps its state").isEqualTo(429);
    assertThat(post("/v1/check", "{\"policy\":\"b\",\"key\":\"k\"}").statusCode())
        .as("changed policy: new limits").isEqualTo(200);
    assertThat(post("/v1/check", "{\"policy\":\"c\",\"key\":\"k\"}").statusCode()).isEqualTo(200);
    Files.writeString(file, "policies:\n  a: {algorithm: leaky-bucket, capacity: -1, rate: 1/1h}\n");
    assertThatThrownBy(() -> server.reload()).isInstanceOf(ConfigException.class)
        .hasMessageContaining(file + ":2: policy 'a': 'capacity' must be positive but was '-1'");
    assertThat(server.policyNames()).as("the old policies stay").contains("c");
    assertThat(get("/metrics").body()).contains("sluice_config_reloads_total{result=\"ok\"} 1")
        .contains("sluice_config_reloads_total{result=\"error\"} 1");
  }

  @Test
  void invalidConfigFile_failsAtStartWithFileAndLine() throws Exception {
    Path file = dir.resolve("bad.yaml");
    Files.writeString(file, "policies:\n  x: {algorithm: leaky-bucket, capacity: 1}\n");
    assertThatThrownBy(() -> SluiceServer.start(new Options().port(0).config(file)))
        .isInstanceOf(ConfigException.class)
        .hasMessage(file + ":2: policy 'x': a leaky-bucket needs 'capacity' and 'rate'");
  }

  @Test
  void shutdown_letsARequestInFlightFinish_andRefusesNewOnes() throws Exception {
    Options options = new Options().port(0);
    // the client below is silent while the test watches the stop begin: on a busy host that can
    // outlast the 1-s shutdown idle rule (tested on its own below)
    options.shutdownIdleTimeout = Duration.ofMinutes(1);
    server = SluiceServer.start(options);
    int port = server.port();
    String body = "{\"policy\":\"demo\",\"key\":\"in-flight\"}";
    try (java.net.Socket slow = new java.net.Socket("127.0.0.1", port)) {
      slow.setSoTimeout(10_000);
      java.io.OutputStream out = slow.getOutputStream();
      // headers and half the body: the request is being handled, waiting for the rest
      out.write(("POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Content-Length: " + body.length() + "\r\n\r\n" + body.substring(0, 10))
          .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.flush();
      awaitTrue(() -> server.requestsInFlight() == 1, "the request to be in flight");

      SluiceServer closing = server;
      server = null;
      Thread closer = new Thread(closing::close, "closer");
      closer.start();
      awaitTrue(closing::isShuttingDown, "shutdown to begin");
      awaitTrue(() -> {
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
          return !s.isConnected();
        } catch (java.io.IOException refused) {
          return true;
        }
      }, "new connections to be refused");
      assertThat(closer.isAlive()).as("close() waits for the request in flight").isTrue();

      out.write(body.substring(10).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.flush();
      String answer = new String(slow.getInputStream().readAllBytes(),
          java.nio.charset.StandardCharsets.UTF_8);
      assertThat(answer).startsWith("HTTP/1.1 200").contains("\"allowed\":true");
      closer.join(10_000);
      assertThat(closer.isAlive()).as("close() returns once the request is answered").isFalse();
    }
  }

  @Test
  void shutdown_closesAConnectionSilentForASecond_evenWithARequestUnderWay() throws Exception {
    server = SluiceServer.start(new Options().port(0).shutdownGrace(Duration.ofMinutes(1)));
    int port = server.port();
    String body = "{\"policy\":\"demo\",\"key\":\"stalled\"}";
    try (java.net.Socket stalled = new java.net.Socket("127.0.0.1", port)) {
      stalled.setSoTimeout(30_000);
      stalled.getOutputStream().write(("POST /v1/check HTTP/1.1\r\nHost: x\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n"
          + body.substring(0, 10)).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      stalled.getOutputStream().flush();
      awaitTrue(() -> server.requestsInFlight() == 1, "the request to be in flight");

      SluiceServer closing = server;
      server = null;
      Thread closer = new Thread(closing::close, "closer");
      closer.start();
      // the grace is a minute; the silent connection is closed after 1 s, and the stop with it
      closer.join(30_000);
      assertThat(closer.isAlive()).as("close() returns long before the grace").isFalse();
      String answer = new String(stalled.getInputStream().readAllBytes(),
          java.nio.charset.StandardCharsets.UTF_8);
      assertThat(answer).as("the stalled request is not decided").doesNotContain("allowed");
    }
  }

  private static void awaitTrue(java.util.function.BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  @Test
  void loopbackByDefault() throws Exception {
    startSample();
    assertThat(new Options().host).isEqualTo("127.0.0.1");
    assertThat(get("/healthz").statusCode()).isEqualTo(200);
  }

  private static final String GROUP_POLICY = """
      policies:
        tenants:
          group:
            parent: {algorithm: leaky-bucket, capacity: 10, rate: 10/1h}
            assured: {algorithm: leaky-bucket, capacity: 2, rate: 2/1h}
            ceiling: {algorithm: leaky-bucket, capacity: 10, rate: 10/1h}
            reserve: 4
            key: prefix
      """;

  @Test
  void groupPolicy_assuredThenBorrowed_thenRejectedWithHeaders_andGroupsApart() throws Exception {
    Path file = dir.resolve("groups.yaml");
    Files.writeString(file, GROUP_POLICY);
    server = SluiceServer.start(new Options().port(0).config(file));
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> r = post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme/a\"}");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(JSON.readTree(r.body()).has("borrowed")).as("within a's assured 2").isFalse();
    }
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> r = post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme/a\"}");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(JSON.readTree(r.body()).get("borrowed").asBoolean()).isTrue();
    }
    HttpResponse<String> full = post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme/a\"}");
    assertThat(full.statusCode()).isEqualTo(429);
    assertThat(full.headers().firstValue("Retry-After")).isPresent();
    assertThat(full.headers().firstValue("RateLimit")).isPresent();
    assertThat(JSON.readTree(full.body()).get("allowed").asBoolean()).isFalse();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> b = post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme/b\"}");
      assertThat(b.statusCode()).as("b's assured %s, into the reserve", i).isEqualTo(200);
    }
    assertThat(post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme/b\"}").statusCode())
        .isEqualTo(429);
    assertThat(post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"globex/a\",\"cost\":6}")
        .statusCode()).as("another tenant, another parent").isEqualTo(200);
    HttpResponse<String> noGroup = post("/v1/check", "{\"policy\":\"tenants\",\"key\":\"acme\"}");
    assertThat(noGroup.statusCode()).isEqualTo(400);
    assertThat(noGroup.body()).contains("acme").contains("prefix");
    HttpResponse<String> reserve = post("/v1/check",
        "{\"policy\":\"tenants\",\"key\":\"acme/c\",\"mode\":\"reserve\"}");
    assertThat(reserve.statusCode()).isEqualTo(400);
    assertThat(reserve.body()).contains("is a group, which answers enforce and peek only");
  }
}

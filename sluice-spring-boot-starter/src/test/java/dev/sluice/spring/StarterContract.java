package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Refusal;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.PrefixedPermitStore;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * What every application with the starter answers over real HTTP, whatever its web stack (MVC on
 * Tomcat, WebFlux on Netty) and its store (memory, Redis, PostgreSQL). The test application's
 * limits refill at 1 an hour, so nothing leaks during a test: every count is exact. Each subclass
 * says with {@code @SpringBootTest} which stack and store it starts.
 */
@AutoConfigureObservability   // Boot's tests turn metrics export off unless asked
abstract class StarterContract {
  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();

  @LocalServerPort
  int port;

  @Autowired
  SluiceLimiters limiters;

  /** A key no other test (or earlier run on a shared server) used. */
  static String fresh() {
    return UUID.randomUUID().toString();
  }

  HttpResponse<String> get(String path, String... headers) throws IOException, InterruptedException {
    return send("GET", path, headers);
  }

  HttpResponse<String> send(String method, String path, String... headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(10)).method(method, HttpRequest.BodyPublishers.noBody());
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String header(HttpResponse<?> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  /** The store the context should be on. */
  abstract String expectedStore();

  /** The concurrency limit of the YAML lives on the store the rate limits use. */
  @Test
  void concurrencyLimits_areOnTheConfiguredStore() {
    ConcurrencyLimiter exports = limiters.concurrency("exports");
    String key = fresh();
    Permit held = exports.tryAcquire(key).permit();
    try {
      assertThat(exports.tryAcquire(key).refusal()).isEqualTo(Refusal.FULL);
      if (limiters.store().isPresent()) {
        assertThat(limiters.store().get()).isInstanceOf(PermitStore.class);
        ConcurrencyLimiter otherInstance = ConcurrencyLimiter.builder().limit(1)
            .store(new PrefixedPermitStore((PermitStore) limiters.store().get(), "exports"))
            .build();
        assertThat(otherInstance.tryAcquire(key).refusal())
            .as("another instance on the same store sees the permit").isEqualTo(Refusal.FULL);
        otherInstance.close();
      }
    } finally {
      held.close();
    }
    assertThat(exports.inFlight(key)).isZero();
  }

  @Test
  void theStoreIsTheOneConfigured() {
    assertThat(limiters.storeName()).isEqualTo(expectedStore());
    assertThat(limiters.all()).containsOnlyKeys("api", "rows", "reports", "paced");
  }

  @Test
  void aRuleLimitsItsPathsPerKey_with429_RetryAfter_andTheRateLimitFields() throws Exception {
    String key = fresh();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> ok = get("/api/hello", "X-Api-Key", key);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("hello");
      assertThat(header(ok, "RateLimit-Policy")).isEqualTo("\"api\";q=3;w=10800");
      assertThat(header(ok, "RateLimit")).startsWith("\"api\";r=" + (2 - i) + ";t=");
    }
    HttpResponse<String> refused = get("/api/hello", "X-Api-Key", key);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(header(refused, "Retry-After")).isEqualTo("3600");
    assertThat(header(refused, "Content-Type")).startsWith("application/problem+json");
    assertThat(refused.body()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Too Many Requests\","
        + "\"status\":429,\"detail\":\"rate limit api exceeded; retry after 3600 s\"}");

    assertThat(get("/api/hello", "X-Api-Key", fresh()).statusCode()).isEqualTo(200);
    HttpResponse<String> open = get("/open", "X-Api-Key", key);
    assertThat(open.statusCode()).isEqualTo(200);
    assertThat(header(open, "RateLimit")).isNull();

    HttpResponse<String> noKey = get("/api/hello");
    assertThat(noKey.statusCode()).isEqualTo(400);
    assertThat(noKey.body()).contains("Missing rate-limit key");
  }

  @Test
  void aQueueHoldsWhatFits_forItsTurnAtTheLeakRate_andRefusesTheRest() throws Exception {
    String key = fresh();
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {   // at once: 1 passes, 1 waits its 0.5 s, the bucket (2) is full
      calls.add(HTTP.sendAsync(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/paced/hello")).header("X-Api-Key", key)
          .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()));
    }
    Map<Integer, Integer> statuses = new TreeMap<>();
    for (CompletableFuture<HttpResponse<String>> c : calls) {
      statuses.merge(c.join().statusCode(), 1, Integer::sum);
    }
    assertThat(statuses).containsExactlyEntriesOf(new TreeMap<>(Map.of(200, 2, 429, 1)));
  }

  @Test
  void costsComeFromAHeader_andEveryLimitOfAPolicyMustAdmit() throws Exception {
    String key = fresh();
    HttpResponse<String> seven = send("POST", "/api/batch", "X-Api-Key", key, "X-Rows", "7");
    assertThat(seven.statusCode()).isEqualTo(200);
    assertThat(header(seven, "RateLimit-Policy"))
        .isEqualTo("\"rows-burst\";q=10;w=36000, \"rows-hourly\";q=100;w=3600");
    HttpResponse<String> four = send("POST", "/api/batch", "X-Api-Key", key, "X-Rows", "4");
    assertThat(four.statusCode()).isEqualTo(429);
    assertThat(four.body()).contains("rows-burst");
    assertThat(send("POST", "/api/batch", "X-Api-Key", key, "X-Rows", "3").statusCode()).isEqualTo(200);
    HttpResponse<String> bad = send("POST", "/api/batch", "X-Api-Key", key, "X-Rows", "lots");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("X-Rows").contains("lots");
    // a GET of the same path is held by the next rule (api), not by rows
    assertThat(header(get("/api/batch", "X-Api-Key", key), "RateLimit-Policy")).startsWith("\"api\"");
  }

  @Test
  void rateLimitedMethods_answer429_withRetryAfter_andTheFields() throws Exception {
    String user = fresh();
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> ok = get("/reports/" + user);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("report for " + user);
    }
    HttpResponse<String> refused = get("/reports/" + user);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(header(refused, "Retry-After")).isEqualTo("3600");
    assertThat(header(refused, "RateLimit")).isEqualTo("\"reports\";r=0;t=14400");
    assertThat(refused.body()).contains("rate limit reports exceeded");

    // a Mono method is decided without blocking; its key and cost (2) are its own
    assertThat(get("/reactive/" + user).body()).isEqualTo("stream for " + user);
    assertThat(get("/reactive/" + user).statusCode()).isEqualTo(200);
    HttpResponse<String> reactiveRefused = get("/reactive/" + user);
    assertThat(reactiveRefused.statusCode()).isEqualTo(429);
    assertThat(header(reactiveRefused, "Retry-After")).isEqualTo("7200");   // 2 tokens, 1 an hour
  }

  @Test
  void actuator_showsTheStoresHealth_andSluicesMeters() throws Exception {
    HttpResponse<String> health = get("/actuator/health/sluice");
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).contains("\"status\":\"UP\"").contains("\"store\":\"" + expectedStore() + "\"");

    String key = fresh();
    for (int i = 0; i < 4; i++) {
      get("/api/hello", "X-Api-Key", key);
    }
    String metrics = get("/actuator/prometheus").body();
    assertThat(metrics).containsPattern("sluice_decisions_total\\{[^}]*limiter=\"api\"[^}]*outcome=\"rejected\"[^}]*\\} [1-9]");
    assertThat(metrics).containsPattern("sluice_decisions_total\\{[^}]*limiter=\"api\"[^}]*outcome=\"allowed\"[^}]*\\} [3-9]");
    assertThat(metrics).contains("sluice_decision_duration_seconds_count{");
    assertThat(metrics).contains("sluice_store_errors_total{limiter=\"api\"");
  }
}

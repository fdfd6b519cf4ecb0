package dev.sluice.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/** What the sample's README section promises, over real HTTP. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SampleApplicationTest {
  private final HttpClient http = HttpClient.newHttpClient();

  @LocalServerPort
  int port;

  private HttpResponse<String> send(String method, String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .method(method, HttpRequest.BodyPublishers.noBody());
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * First, so that no other test's request is still in the bucket. The bucket leaks at 5/s while
   * the burst runs (a second or more on a busy host), so it admits 10 plus what leaked meanwhile.
   */
  @Test
  @Order(1)
  void aBurstOfMoreThanTenRequestsFromOneAddress_gets429_withRetryAfter() throws Exception {
    int ok = 0;
    HttpResponse<String> refused = null;
    long start = System.nanoTime();
    for (int i = 0; i < 200 && refused == null; i++) {
      HttpResponse<String> r = send("GET", "/api/hello");
      if (r.statusCode() == 200) {
        ok++;
      } else {
        assertThat(r.statusCode()).isEqualTo(429);
        refused = r;
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    assertThat(refused).as("a refusal within 200 requests (%s s)", seconds).isNotNull();
    // 10 fit the bucket at once; the rest leaked at 5/s while the burst ran
    assertThat(ok).as("admitted in %s s", seconds).isBetween(10, 10 + (int) Math.ceil(5 * seconds));
    assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=10;w=2");
  }

  @Test
  void ordersAreCountedInItems_perApiKey() throws Exception {
    assertThat(send("POST", "/api/orders", "X-Api-Key", "k1", "X-Items", "100").statusCode()).isEqualTo(200);
    assertThat(send("POST", "/api/orders", "X-Api-Key", "k1", "X-Items", "5").statusCode()).isEqualTo(429);
    assertThat(send("POST", "/api/orders", "X-Api-Key", "k2", "X-Items", "5").statusCode()).isEqualTo(200);
  }

  @Test
  void reportsAreLimitedPerUser() throws Exception {
    assertThat(send("GET", "/reports/ann").statusCode()).isEqualTo(200);
    assertThat(send("GET", "/reports/ann").statusCode()).isEqualTo(200);
    HttpResponse<String> third = send("GET", "/reports/ann");
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(third.body()).contains("rate limit reports exceeded");
    assertThat(send("GET", "/reports/bob").statusCode()).isEqualTo(200);
  }

  @Test
  void theHealthAndTheMetricsAreOnTheActuator() throws Exception {
    send("GET", "/api/hello");
    assertThat(send("GET", "/actuator/health").body()).contains("\"sluice\":{\"status\":\"UP\"");
  }
}

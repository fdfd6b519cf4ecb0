package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * {@code sluice.health.*} from properties, over real HTTP, on both stacks: the application's own
 * signal ({@code test-load}, a HealthSignal bean) past its band sheds sheddable requests with
 * 503 naming it, critical ones still run, and Actuator shows the signal and the shedding state.
 */
class HealthSheddingTest {
  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();

  @AutoConfigureObservability
  abstract static class Contract {
    @LocalServerPort
    int port;

    @Autowired
    MeterRegistry meters;

    @AfterEach
    void healthy() {
      TestApp.LOAD.set(0.0);
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
          .timeout(Duration.ofSeconds(20));
      for (int i = 0; i < headers.length; i += 2) {
        b.header(headers[i], headers[i + 1]);
      }
      return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void pastItsBand_sheddableRequestsAre503NamingTheSignal_criticalOnesRun() throws Exception {
      assertThat(get("/open", "X-Priority", "sheddable").statusCode()).isEqualTo(200);
      TestApp.LOAD.set(0.99);
      // the shedder reads its signals at most every millisecond: the next reading sees 0.99
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      HttpResponse<String> shed;
      do {
        shed = get("/open", "X-Priority", "sheddable");
      } while (shed.statusCode() == 200 && System.nanoTime() < deadline);
      assertThat(shed.statusCode()).isEqualTo(503);
      assertThat(shed.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(shed.body()).contains("shedding load: shed: test-load at 0.99 (sheds SHEDDABLE"
          + " from 0.80, all but critical at 0.90");
      assertThat(get("/open", "X-Priority", "critical").statusCode()).isEqualTo(200);
      HttpResponse<String> health = get("/actuator/health/sluice");
      assertThat(health.statusCode()).as("shedding leaves the instance UP").isEqualTo(200);
      assertThat(health.body()).contains("\"shedding\":{\"pressure\":1.0",
          "\"name\":\"test-load\",\"value\":0.99,\"start\":0.8,\"full\":0.9,\"shedding\":true");
      assertThat(meters.get("sluice.health.signal").tag("signal", "test-load").gauge().value())
          .isEqualTo(0.99);
      assertThat(meters.get("sluice.health.pressure").gauge().value()).isEqualTo(1.0);
      assertThat(meters.get("sluice.health.shed").tag("priority", "sheddable").functionCounter()
          .count()).isGreaterThanOrEqualTo(1);
      assertThat(meters.get("sluice.health.shed").tag("priority", "critical").functionCounter()
          .count()).isZero();
    }
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=servlet", "sluice.store.type=memory",
          "spring.autoconfigure.exclude="
              + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
          "sluice.health.signals[0].signal=test-load", "sluice.health.signals[0].start=0.8",
          "sluice.health.signals[0].full=0.9", "sluice.health.sample-every=1ms",
          "sluice.health.guard=false"})
  class Mvc extends Contract {}

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=reactive", "sluice.store.type=memory",
          "spring.autoconfigure.exclude="
              + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
          "sluice.health.signals[0].signal=test-load", "sluice.health.signals[0].start=0.8",
          "sluice.health.signals[0].full=0.9", "sluice.health.sample-every=1ms",
          "sluice.health.guard=false"})
  class WebFlux extends Contract {}
}

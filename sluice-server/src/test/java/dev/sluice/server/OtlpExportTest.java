package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * --otlp-endpoint: the service pushes its meters over OTLP (http/protobuf) to a receiver of the
 * test's, parsed with the official OpenTelemetry protos: decisions by policy and outcome, HTTP
 * responses, a concurrency limit's figures.
 */
class OtlpExportTest {
  @TempDir
  Path dir;

  /** The last value of each metric and attribute set a push carried. */
  private final Map<String, Double> received = new ConcurrentHashMap<>();

  private static String key(Metric m, NumberDataPoint p) {
    return m.getName() + p.getAttributesList().stream()
        .map(kv -> kv.getKey() + "=" + kv.getValue().getStringValue()).sorted()
        .collect(Collectors.joining(",", "{", "}"));
  }

  private static double value(NumberDataPoint p) {
    return p.hasAsDouble() ? p.getAsDouble() : p.getAsInt();
  }

  @Test
  void theMeters_arePushedOverOtlp() throws Exception {
    HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    receiver.createContext("/v1/metrics", exchange -> {
      ExportMetricsServiceRequest r = ExportMetricsServiceRequest.parseFrom(
          exchange.getRequestBody().readAllBytes());
      r.getResourceMetricsList().forEach(rm -> rm.getScopeMetricsList().forEach(sm ->
          sm.getMetricsList().forEach(m -> {
            var points = m.hasSum() ? m.getSum().getDataPointsList()
                : m.hasGauge() ? m.getGauge().getDataPointsList() : java.util.List.<NumberDataPoint>of();
            points.forEach(p -> received.put(key(m, p), value(p)));
          })));
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    receiver.start();
    Path policies = dir.resolve("p.yaml");
    Files.writeString(policies, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 3, rate: 1/1h}
        concurrency:
          db: {limit: 1}
        """);
    HttpClient http = HttpClient.newHttpClient();
    try (SluiceServer s = SluiceServer.start(new Options().port(0).config(policies)
        .otlpEndpoint("http://127.0.0.1:" + receiver.getAddress().getPort() + "/v1/metrics")
        .otlpStep(Duration.ofSeconds(1)))) {
      for (int i = 0; i < 4; i++) {
        http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v1/check"))
            .POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"api\",\"key\":\"k\"}"))
            .build(), HttpResponse.BodyHandlers.discarding());
      }
      http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port()
          + "/v1/permits")).POST(HttpRequest.BodyPublishers.ofString(
          "{\"limit\":\"db\",\"key\":\"orders\"}")).build(), HttpResponse.BodyHandlers.discarding());
      long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      // a push may fall between a decision and its response: wait for one that has both
      while (received.getOrDefault("sluice.concurrency.acquired{limit=db}", 0.0) < 1
          || received.getOrDefault("sluice.decisions{outcome=rejected,policy=api}", 0.0) < 1
          || !received.containsKey("sluice.http.responses{code=429}")) {
        assertThat(System.nanoTime()).as("a push within 30 s; so far %s", received)
            .isLessThan(end);
        Thread.onSpinWait();
      }
      assertThat(received).containsEntry("sluice.decisions{outcome=allowed,policy=api}", 3.0)
          .containsEntry("sluice.decisions{outcome=rejected,policy=api}", 1.0)
          .containsEntry("sluice.concurrency.in.flight{limit=db}", 1.0)
          .containsEntry("sluice.concurrency.refused{limit=db,reason=full}", 0.0)
          .containsKey("sluice.http.responses{code=429}")
          .containsKey("sluice.store.errors{policy=api}");
    } finally {
      receiver.stop(0);
    }
  }

  @Test
  void badOtlpSettings_areNamed() {
    assertThatThrownBy(() -> new Options().otlpEndpoint("collector:4318"))
        .hasMessageContaining("--otlp-endpoint must be an http:// or https:// URL");
    assertThatThrownBy(() -> new Options().otlpStep(Duration.ofMillis(10)))
        .hasMessageContaining("--otlp-step must be between 1s and 1h but was 10ms");
  }
}

package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.LeaseSettings;
import dev.sluice.testkit.Dashboards;
import dev.sluice.testkit.Ports;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.embedded.RedisServer;

/**
 * docs/grafana/sluice-service.json against what the service exports: a real service on a real
 * Redis, in fleet mode, with concurrency limits and Envoy's API, after a little traffic; every
 * metric its queries name is in /metrics, with the labels they use.
 */
class DashboardTest {
  private final HttpClient http = HttpClient.newHttpClient();

  @TempDir
  Path dir;

  private HttpResponse<String> send(SluiceServer s, String method, String path, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
        .header("X-Priority", "critical")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void theServiceDashboard_queriesWhatTheServiceExports() throws Exception {
    int port = Ports.free();
    RedisServer redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    redis.start();
    Path policies = dir.resolve("p.yaml");
    Files.writeString(policies, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}
        concurrency:
          db: {limit: 1}
        """);
    Path envoy = dir.resolve("envoy.yaml");
    Files.writeString(envoy, "domain: edge\ndescriptors:\n  - key: user\n    rate_limit:"
        + " {unit: minute, requests_per_unit: 1}\n");
    try (SluiceServer s = SluiceServer.start(new Options().port(0).config(policies)
        .redis("redis://127.0.0.1:" + port).leases(LeaseSettings.defaults().withExcessShare(0.1))
        .grpcPort(0).envoyConfig(envoy))) {
      for (int i = 0; i < 50; i++) {
        send(s, "POST", "/v1/check", "{\"policy\":\"api\",\"key\":\"k\"}");
      }
      send(s, "POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}");
      send(s, "POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}");
      ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", s.grpcPort())
          .usePlaintext().build();
      try {
        RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
            .shouldRateLimit(RateLimitRequest.newBuilder().setDomain("edge")
                .addDescriptors(RateLimitDescriptor.newBuilder().addEntries(
                    RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue("a")))
                .build());
      } finally {
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      }
      String metrics = send(s, "GET", "/metrics", null).body();
      assertThat(metrics).contains("sluice_lease_units_held", "sluice_envoy_descriptors_total");
      Dashboards.assertMatches(Path.of("../docs/grafana/sluice-service.json"), metrics);
    } finally {
      redis.stop();
    }
  }
}

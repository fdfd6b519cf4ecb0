package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar, {@code target/sluice.jar}, as users run it: the shade step keeps only the
 * classes of Envoy's API that the service reaches, so this starts {@code java -jar sluice.jar
 * serve} and uses every front door (a check, a permit, /metrics, Envoy's ShouldRateLimit over
 * gRPC, a simulation). Run after packaging (the sluice-cli pom's {@code jar-smoke} execution),
 * with {@code -Dsluice.jar}; skipped by the test phase, where the jar is not built yet.
 */
class JarSmokeTest {
  @TempDir
  Path dir;

  private static Path jar() {
    String jar = System.getProperty("sluice.jar");
    assertThat(jar).as("-Dsluice.jar names the packaged jar").isNotNull();
    assertThat(Path.of(jar)).exists();
    return Path.of(jar);
  }

  private static ProcessBuilder java(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-jar");
    cmd.add(jar().toString());
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectErrorStream(true);
  }

  @Test
  void serve_answersChecksPermitsMetricsEnvoyAndTheConsole() throws Exception {
    Path policies = dir.resolve("p.yaml");
    Files.writeString(policies, "policies:\n  only: {algorithm: leaky-bucket, capacity: 1,"
        + " rate: 1/1h}\nconcurrency:\n  db: {limit: 1}\n");
    Path envoy = dir.resolve("envoy.yaml");
    Files.writeString(envoy, "domain: smoke\ndescriptors:\n  - key: user\n    rate_limit:"
        + " {unit: minute, requests_per_unit: 1}\n");
    ProcessBuilder serve = java("serve", "--port", "0", "--grpc-port", "0", "--config",
        policies.toString(), "--envoy-config", envoy.toString());
    serve.environment().put("SLUICE_ADMIN_TOKEN", "admin-0123456789abcdef");
    Process p = serve.start();
    List<String> lines = Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<Integer> http = new CompletableFuture<>();
    CompletableFuture<Integer> grpc = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      Pattern h = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)");
      Pattern g = Pattern.compile("\\(gRPC\\) on 127\\.0\\.0\\.1:(\\d+)");
      try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          lines.add(line);
          Matcher m = h.matcher(line);
          if (m.find()) {
            http.complete(Integer.parseInt(m.group(1)));
          }
          m = g.matcher(line);
          if (m.find()) {
            grpc.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException e) {
        http.completeExceptionally(e);
      }
      http.complete(-1);
      grpc.complete(-1);
    });
    reader.start();
    try {
      int port = http.get(120, TimeUnit.SECONDS);
      assertThat(port).as("started: %s", lines).isPositive();
      HttpClient client = HttpClient.newHttpClient();
      assertThat(post(client, port, "/v1/check", "{\"policy\":\"only\",\"key\":\"a\"}"))
          .as("a check").isEqualTo(200);
      assertThat(post(client, port, "/v1/check", "{\"policy\":\"only\",\"key\":\"a\"}"))
          .as("the next check of the key").isEqualTo(429);
      assertThat(post(client, port, "/v1/permits", "{\"limit\":\"db\",\"key\":\"k\"}"))
          .as("a permit").isEqualTo(200);
      HttpResponse<String> metrics = client.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(metrics.body()).contains("sluice_concurrency_permits_held 1");
      for (String asset : List.of("/console/", "/console/console.js", "/console/console.css")) {
        assertThat(client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
            + asset)).build(), HttpResponse.BodyHandlers.discarding()).statusCode())
            .as("the console's %s, from the jar", asset).isEqualTo(200);
      }
      int rpc = grpc.get(60, TimeUnit.SECONDS);
      assertThat(rpc).as("gRPC started: %s", lines).isPositive();
      ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", rpc).usePlaintext()
          .build();
      try {
        RateLimitRequest request = RateLimitRequest.newBuilder().setDomain("smoke")
            .addDescriptors(RateLimitDescriptor.newBuilder().addEntries(
                RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue("alice")))
            .build();
        RateLimitServiceGrpc.RateLimitServiceBlockingStub stub =
            RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
        assertThat(stub.shouldRateLimit(request).getOverallCode())
            .isEqualTo(RateLimitResponse.Code.OK);
        assertThat(stub.shouldRateLimit(request).getOverallCode())
            .isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
      } finally {
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      }
    } finally {
      p.destroy();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      reader.join(10_000);
    }
    assertThat(p.exitValue()).as("exit status after SIGTERM; output: %s", lines).isZero();
  }

  @Test
  void simulate_runsFromTheJar() throws Exception {
    Process p = java("simulate", "burst").start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("leaky-meter", "leaky-queue", "gcra", "sliding-window");
  }

  private static int post(HttpClient client, int port, String path, String body)
      throws IOException, InterruptedException {
    return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.discarding()).statusCode();
  }
}

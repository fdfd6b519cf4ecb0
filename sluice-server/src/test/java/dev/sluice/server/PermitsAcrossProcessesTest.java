package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.testkit.Ports;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.embedded.RedisServer;

/**
 * Issue 44, item 4, across two JVMs on a real Redis: a permit granted by one service process is
 * renewed and released through another (behind a load balancer, a release may land on any
 * instance), and comes back at once; a permit id changed by a character names no permit.
 */
class PermitsAcrossProcessesTest {
  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aPermitGrantedByOneServiceJvm_isRenewedAndReleasedThroughAnother(@TempDir Path dir)
      throws Exception {
    int redisPort = Ports.free();
    RedisServer redis = RedisServer.newRedisServer().port(redisPort).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    redis.start();
    String uri = "redis://127.0.0.1:" + redisPort;
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, "policies:\n  demo: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}\n"
        + "concurrency:\n  db: {limit: 1, lease: 1h}\n");
    Process other = start(uri, config);
    try (BufferedReader out = new BufferedReader(new InputStreamReader(other.getInputStream(),
            StandardCharsets.UTF_8));
        SluiceServer here = SluiceServer.start(new Options().port(0).redis(uri).config(config))) {
      int otherPort = -1;
      List<String> lines = new ArrayList<>();
      for (String line; otherPort < 0 && (line = out.readLine()) != null; ) {
        lines.add(line);
        if (line.startsWith("port=")) {
          otherPort = Integer.parseInt(line.substring(5));
        }
      }
      assertThat(otherPort).as("the other JVM listens: %s", lines).isPositive();
      int there = otherPort;
      String body = "{\"limit\":\"db\",\"key\":\"orders\"}";
      HttpResponse<String> taken = call(there, "POST", "/v1/permits", body);
      assertThat(taken.statusCode()).as(taken.body()).isEqualTo(200);
      String id = new ObjectMapper().readTree(taken.body()).get("permit").asText();
      assertThat(call(here.port(), "POST", "/v1/permits", body).statusCode())
          .as("limit 1, held by the other JVM").isEqualTo(429);
      HttpResponse<String> renewed = call(here.port(), "POST", "/v1/permits/" + id + "/renew",
          null);
      assertThat(renewed.statusCode()).as(renewed.body()).isEqualTo(200);
      // one character changed in the middle: the last one of base64 may carry only padding bits,
      // which a decoder ignores, so changing it can name the same bytes
      int at = id.length() / 2;
      String forged = id.substring(0, at) + (id.charAt(at) == 'A' ? 'B' : 'A')
          + id.substring(at + 1);
      assertThat(call(here.port(), "DELETE", "/v1/permits/" + forged, null).statusCode())
          .isEqualTo(404);
      HttpResponse<String> released = call(here.port(), "DELETE", "/v1/permits/" + id, null);
      assertThat(released.statusCode()).as(released.body()).isEqualTo(200);
      HttpResponse<String> again = call(here.port(), "POST", "/v1/permits", body);
      assertThat(again.statusCode()).as("the permit came back at once: " + again.body())
          .isEqualTo(200);
      String mine = new ObjectMapper().readTree(again.body()).get("permit").asText();
      assertThat(call(there, "DELETE", "/v1/permits/" + id, null).statusCode())
          .as("released once").isEqualTo(404);
      assertThat(call(there, "DELETE", "/v1/permits/" + mine, null).statusCode())
          .as("and the other way round").isEqualTo(200);
      assertThat(call(there, "POST", "/v1/permits", body).statusCode()).isEqualTo(200);
    } finally {
      other.getOutputStream().close();
      if (!other.waitFor(20, TimeUnit.SECONDS)) {
        other.destroyForcibly();
      }
      redis.stop();
    }
  }

  private HttpResponse<String> call(int port, String method, String path, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static Process start(String redisUri, Path config) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classPath = System.getProperty("java.class.path");
    String modulePath = System.getProperty("jdk.module.path");
    if (modulePath != null && !modulePath.isEmpty()) {
      classPath = modulePath + File.pathSeparator + classPath;
    }
    return new ProcessBuilder(java, "-Xmx256m", "-cp", classPath,
        ServiceProcess.class.getName(), redisUri, config.toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }
}

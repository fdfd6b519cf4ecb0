package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testkit.DocCurl;
import dev.sluice.testkit.DocSnippets;
import dev.sluice.testkit.DocSnippets.Snippet;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * The service's pages do what they show: the README's and docs/server.md's {@code curl} calls,
 * sent to a service started as the page starts it, answer with the status, the header fields and
 * the body fields the page prints under them; the YAML blocks of docs/server.md, put together, are
 * a policies file the service starts with; docs/envoy.md's configurations load.
 */
class DocCommandsTest {
  private static final String ADMIN = "doc-admin-token-0123456789";
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

  private URI base() {
    return URI.create("http://127.0.0.1:" + server.port());
  }

  @Test
  void theReadmesCurlCalls_answerAsTheReadmeShows() throws Exception {
    server = SluiceServer.start(new Options().port(0));   // ./sluice serve: the bundled sample
    List<Snippet> blocks = DocSnippets.blocks(Path.of("../README.md"), "sh").stream()
        .filter(s -> s.code().startsWith("curl ")).toList();
    assertThat(blocks).hasSize(1);
    assertThat(DocCurl.run(blocks.get(0), http, base(), Map.of())).isEqualTo(2);
  }

  @Test
  void theServerPage_yamlIsOnePoliciesFile_andItsCurlCallsAnswerAsShown() throws Exception {
    List<Snippet> yaml = DocSnippets.blocks(Path.of("../docs/server.md"), "yaml");
    StringBuilder file = new StringBuilder();
    for (Snippet s : yaml) {
      new Yaml().load(s.code());   // each block is YAML on its own (a fragment is a nested map)
      file.append(s.code());       // and, in order, they are one file: the fragment is a policy
    }
    assertThat(yaml).as("policies, a group, store, concurrency").hasSize(4);
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, file);
    server = SluiceServer.start(new Options().port(0).config(config).adminToken(ADMIN));

    List<Snippet> calls = DocSnippets.blocks(Path.of("../docs/server.md"), "sh").stream()
        .filter(s -> s.code().startsWith("curl ")).toList();
    assertThat(calls).as("permits, top refused, quotas").hasSize(3);
    int sent = 0;
    for (Snippet s : calls) {
      if (s.code().contains("top-refused")) {
        // the page's example: one address flooding the api policy (10 a burst, then refusals)
        for (int i = 0; i < 15; i++) {
          http.send(HttpRequest.newBuilder(base().resolve("/v1/check")).POST(HttpRequest
              .BodyPublishers.ofString("{\"policy\":\"api\",\"key\":\"203.0.113.9\"}")).build(),
              HttpResponse.BodyHandlers.discarding());
        }
      }
      sent += DocCurl.run(s, http, base(), Map.of("SLUICE_ADMIN_TOKEN", ADMIN));
    }
    assertThat(sent).isEqualTo(9);

    List<Snippet> bodies = DocSnippets.blocks(Path.of("../docs/server.md"), "json");
    assertThat(bodies).as("the check's body").hasSize(1);
    HttpResponse<String> check = http.send(HttpRequest.newBuilder(base().resolve("/v1/check"))
        .POST(HttpRequest.BodyPublishers.ofString(bodies.get(0).code())).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(check.statusCode()).as(check.body()).isEqualTo(200);
  }

  @Test
  void theEnvoyPage_configurationsLoad() throws Exception {
    List<Snippet> yaml = DocSnippets.blocks(Path.of("../docs/envoy.md"), "yaml");
    assertThat(yaml).as("Envoy's filter, a ratelimit file, a policies file").hasSize(3);
    Map<String, Object> envoy = new Yaml().load(yaml.get(0).code());
    assertThat(envoy).containsKey("http_filters");
    Path ratelimit = dir.resolve("edge.yaml");
    Files.writeString(ratelimit, yaml.get(1).code());
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, yaml.get(2).code());
    server = SluiceServer.start(new Options().port(0).grpcPort(0).envoyConfig(ratelimit)
        .config(policies));
    assertThat(server.grpcPort()).isPositive();
  }
}

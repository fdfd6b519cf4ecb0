package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testkit.DocSnippets;
import dev.sluice.testkit.DocSnippets.Snippet;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  @Test
  void theReadmesCurlCalls_answerAsTheReadmeShows() throws Exception {
    server = SluiceServer.start(new Options().port(0));   // ./sluice serve: the bundled sample
    List<Snippet> blocks = DocSnippets.blocks(Path.of("../README.md"), "sh").stream()
        .filter(s -> s.code().startsWith("curl ")).toList();
    assertThat(blocks).hasSize(1);
    assertThat(run(blocks.get(0), Map.of())).isEqualTo(2);
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
          send("POST", "/v1/check", Map.of(), "{\"policy\":\"api\",\"key\":\"203.0.113.9\"}");
        }
      }
      sent += run(s, Map.of("SLUICE_ADMIN_TOKEN", ADMIN));
    }
    assertThat(sent).isEqualTo(9);
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

  // ---- a curl of the few options the pages use, and the output they print under it ----

  private static final Pattern EXPECTED_STATUS_LINE = Pattern.compile("HTTP/1\\.1 (\\d{3}) .*");
  private static final Pattern EXPECTED_STATUS_BODY = Pattern.compile("(\\d{3})(?: (\\{.*))?");
  private static final Pattern HEADER = Pattern.compile("([A-Za-z-]+): (.+)");
  private static final Pattern PAIR =
      Pattern.compile("\"(\\w+)\":(\"[^\"]*\"|true|false|-?\\d+(?:\\.\\d+)?)");

  /** Sends every command of the block and checks what it prints; how many it sent. */
  private int run(Snippet block, Map<String, String> env) throws Exception {
    List<String[]> commands = new ArrayList<>();   // {command, expected lines}
    String pending = null;
    StringBuilder expected = new StringBuilder();
    for (String raw : block.code().lines().toList()) {
      String line = raw.strip();
      if (line.startsWith("#")) {
        expected.append(line.replaceFirst("^#\\s*", "")).append('\n');
      } else if (pending != null && pending.endsWith("\\")) {
        pending = pending.substring(0, pending.length() - 1) + " " + line;
      } else if (pending != null && pending.chars().filter(ch -> ch == '\'').count() % 2 == 1) {
        pending = pending + "\n" + line;   // a quoted body goes on
      } else if (line.startsWith("curl ")) {
        if (pending != null) {
          commands.add(new String[] {pending, expected.toString()});
        }
        expected.setLength(0);
        pending = line;
      } else if (!line.isEmpty()) {
        throw new AssertionError(block.where() + ": the test cannot read the line '" + line + "'");
      }
    }
    commands.add(new String[] {pending, expected.toString()});
    String lastPermit = null;
    for (String[] c : commands) {
      String command = c[0];
      String comment = "";
      int hash = command.indexOf("  # ");   // an inline comment after the command
      if (hash > 0) {
        comment = command.substring(hash + 4).strip() + "\n";
        command = command.substring(0, hash);
      }
      if (lastPermit != null) {
        command = command.replace("9f1c...", lastPermit);
      }
      HttpResponse<String> r = curl(command, env);
      String where = block.where() + ": " + command;
      checkOutput(where, r, comment + c[1]);
      Matcher permit = Pattern.compile("\"permit\":\"([^\"]+)\"").matcher(r.body());
      if (permit.find()) {
        lastPermit = permit.group(1);
      }
    }
    return commands.size();
  }

  private HttpResponse<String> curl(String command, Map<String, String> env) throws Exception {
    List<String> words = words(command, env);
    assertThat(words.get(0)).isEqualTo("curl");
    String method = null;
    String body = null;
    String url = null;
    List<String> headers = new ArrayList<>();
    for (int i = 1; i < words.size(); i++) {
      String w = words.get(i);
      switch (w) {
        case "-i", "-s" -> { }
        case "-X" -> method = words.get(++i);
        case "-H" -> headers.add(words.get(++i));
        case "-d" -> body = words.get(++i);
        default -> {
          assertThat(w).as("an option the test's curl knows, in " + command).doesNotStartWith("-");
          url = w;
        }
      }
    }
    assertThat(url).as("the URL of " + command).startsWith("http://127.0.0.1:8080/");
    if (method == null) {
      method = body == null ? "GET" : "POST";
    }
    Map<String, String> h = new LinkedHashMap<>();
    for (String header : headers) {
      int colon = header.indexOf(':');
      h.put(header.substring(0, colon).strip(), header.substring(colon + 1).strip());
    }
    return send(method, url.substring("http://127.0.0.1:8080".length()), h, body);
  }

  private HttpResponse<String> send(String method, String path, Map<String, String> headers,
      String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
        + path)).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(b::header);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The page's lines under a command: a status line, header fields, a body, or "200 {body}". */
  private static void checkOutput(String where, HttpResponse<String> r, String expected) {
    if (expected.isBlank()) {
      assertThat(r.statusCode()).as(where + " (the page shows no output: a success)\n" + r.body())
          .isBetween(200, 299);
    }
    for (String line : expected.lines().map(String::strip).filter(l -> !l.isEmpty()).toList()) {
      Matcher statusLine = EXPECTED_STATUS_LINE.matcher(line);
      Matcher statusBody = EXPECTED_STATUS_BODY.matcher(line);
      Matcher header = HEADER.matcher(line);
      if (statusLine.matches()) {
        assertThat(r.statusCode()).as(where + "\n" + r.body()).isEqualTo(
            Integer.parseInt(statusLine.group(1)));
      } else if (statusBody.matches()) {
        assertThat(r.statusCode()).as(where + "\n" + r.body()).isEqualTo(
            Integer.parseInt(statusBody.group(1)));
        if (statusBody.group(2) != null) {
          checkBody(where, r.body(), statusBody.group(2));
        }
      } else if (line.startsWith("{")) {
        checkBody(where, r.body(), line);
      } else if (header.matches()) {
        assertThat(r.headers().firstValue(header.group(1))).as(where + ": " + header.group(1))
            .hasValue(header.group(2));
      } else {
        throw new AssertionError(where + ": the test cannot read the page's line '" + line + "'");
      }
    }
  }

  /**
   * Every field the page prints with a whole value is in the body: strings and booleans as
   * printed; numbers as numbers (their values are examples: a wait, a count).
   */
  private static void checkBody(String where, String body, String shown) {
    Matcher pair = PAIR.matcher(shown);
    int fields = 0;
    while (pair.find()) {
      fields++;
      String key = pair.group(1);
      String value = pair.group(2);
      if (value.contains("...")) {
        assertThat(body).as(where + ": the field " + key).contains("\"" + key + "\":");
      } else if (value.startsWith("\"") || value.equals("true") || value.equals("false")) {
        assertThat(body).as(where + ": the field " + key).contains("\"" + key + "\":" + value);
      } else {
        assertThat(body).as(where + ": the field " + key + " (a number)")
            .containsPattern("\"" + key + "\":-?\\d");
      }
    }
    assertThat(fields).as(where + ": fields shown").isPositive();
  }

  /** A shell's words: quotes, backslash-newlines joined, $NAME from {@code env}. */
  private static List<String> words(String command, Map<String, String> env) {
    List<String> words = new ArrayList<>();
    StringBuilder w = null;
    char quote = 0;
    for (int i = 0; i < command.length(); i++) {
      char c = command.charAt(i);
      if (quote == 0 && Character.isWhitespace(c)) {
        if (w != null) {
          words.add(w.toString());
          w = null;
        }
        continue;
      }
      if (w == null) {
        w = new StringBuilder();
      }
      if (quote == 0 && (c == '\'' || c == '"')) {
        quote = c;
      } else if (c == quote) {
        quote = 0;
      } else if (c == '$' && quote != '\'') {
        Matcher name = Pattern.compile("[A-Z_]+").matcher(command).region(i + 1, command.length());
        assertThat(name.lookingAt()).isTrue();
        assertThat(env).as("the page's $" + name.group()).containsKey(name.group());
        w.append(env.get(name.group()));
        i = name.end() - 1;
      } else {
        w.append(c);
      }
    }
    if (w != null) {
      words.add(w.toString());
    }
    return words;
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testkit.DocSnippets.Snippet;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A page's {@code curl} calls, sent over HTTP and checked against what the page prints under them:
 * a curl of the few options the pages use ({@code -i}, {@code -s}, {@code -X}, {@code -H},
 * {@code -d}), quotes and line continuations as a shell reads them.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class DocCurl {
  private static final Pattern EXPECTED_STATUS_LINE = Pattern.compile("HTTP/1\\.1 (\\d{3}) .*");
  private static final Pattern EXPECTED_STATUS_BODY = Pattern.compile("(\\d{3})(?: (\\{.*))?");
  private static final Pattern HEADER = Pattern.compile("([A-Za-z-]+): (.+)");
  private static final Pattern PAIR =
      Pattern.compile("\"(\\w+)\":(\"[^\"]*\"|true|false|-?\\d+(?:\\.\\d+)?)");

  private DocCurl() {}

  /**
   * Sends every {@code curl} of {@code block} to {@code base} (in place of the page's
   * {@code http://127.0.0.1:8080} or {@code localhost:8080}), with {@code $NAME}s from
   * {@code env}, and checks what the page prints under each (or beside it, after {@code #}): a
   * status line, header fields, a body's fields, or {@code 200 {...}}; a command the page shows no
   * output for must succeed (2xx). A permit id shown as {@code 9f1c...} is the last one answered.
   *
   * @return how many commands it sent
   */
  public static int run(Snippet block, HttpClient http, URI base, Map<String, String> env)
      throws Exception {
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
      HttpResponse<String> r = curl(command, http, base, env);
      String where = block.where() + ": " + command;
      checkOutput(where, r, comment + c[1]);
      Matcher permit = Pattern.compile("\"permit\":\"([^\"]+)\"").matcher(r.body());
      if (permit.find()) {
        lastPermit = permit.group(1);
      }
    }
    return commands.size();
  }

  private static HttpResponse<String> curl(String command, HttpClient http, URI base,
      Map<String, String> env) throws Exception {
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
    assertThat(url).as("the URL of " + command).matches("(http://)?(127\\.0\\.0\\.1|localhost):8080/.*");
    if (method == null) {
      method = body == null ? "GET" : "POST";
    }
    Map<String, String> h = new LinkedHashMap<>();
    for (String header : headers) {
      int colon = header.indexOf(':');
      h.put(header.substring(0, colon).strip(), header.substring(colon + 1).strip());
    }
    String path = url.substring(url.indexOf(":8080") + 5);
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).method(method,
        body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    h.forEach(b::header);
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

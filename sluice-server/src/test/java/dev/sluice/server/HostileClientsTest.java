package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service as attackers and bad networks treat it, over raw sockets: slow bodies, slow heads,
 * malformed framing, floods of new keys, out-of-range limits on reload (issue 11).
 */
class HostileClientsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private SluiceServer server;
  private final List<Socket> sockets = new ArrayList<>();

  @TempDir
  Path dir;

  @AfterEach
  void stop() throws IOException {
    for (Socket s : sockets) {
      s.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** One request over a fresh connection; the whole answer, head and body. */
  private String exchange(String request) throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private String metrics() throws IOException {
    return exchange("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  }

  private static String check(String body) {
    return "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  private static JsonNode body(String response) throws IOException {
    return JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4));
  }

  private static int status(String response) {
    return Integer.parseInt(response.substring(9, 12));
  }

  /** Milliseconds for /healthz over a fresh connection. */
  private long healthzMillis() throws IOException {
    long start = System.nanoTime();
    String r = exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assertThat(r).startsWith("HTTP/1.1 200");
    return (System.nanoTime() - start) / 1_000_000;
  }

  /**
   * Regression (issue 11, defect 1): about 200 connections announcing a body and sending a byte
   * every 2 s froze /healthz and /v1/check, one blocked thread each. Now 1,000 such connections
   * hold no thread, well-behaved requests are answered at once, and each slow request gets 408
   * when its deadline passes.
   */
  @Test
  void thousandSlowBodies_holdNoThread_andGet408AtTheirDeadline() throws Exception {
    server = SluiceServer.start(new Options().port(0).maxThreads(16)
        .requestTimeout(Duration.ofSeconds(3)));
    for (int i = 0; i < 1_000; i++) {
      Socket s = new Socket("127.0.0.1", server.port());
      sockets.add(s);
      s.getOutputStream().write(("POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
          .getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
    }
    long slowest = 0;
    for (int i = 0; i < 20; i++) {
      slowest = Math.max(slowest, healthzMillis());
      String r = exchange(check("{\"policy\":\"jobs\",\"key\":\"k" + i + "\"}"));
      assertThat(status(r)).isEqualTo(200);
    }
    assertThat(slowest).as("slowest /healthz with 1,000 slow bodies open, ms").isLessThan(1_000);
    // each slow request is answered 408 when its deadline passes, and its connection closed
    for (Socket s : sockets.subList(0, 20)) {
      s.setSoTimeout(15_000);
      String r = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(r).startsWith("HTTP/1.1 408").contains("Content-Type: application/problem+json");
      assertThat(body(r).get("title").asText()).isEqualTo("Request Timeout");
      assertThat(body(r).get("type").asText()).isEqualTo("about:blank");
    }
  }

  /** A head trickled a byte at a time: the connection is closed after the request timeout. */
  @Test
  void slowHead_isClosedAfterTheRequestTimeout() throws Exception {
    server = SluiceServer.start(new Options().port(0).requestTimeout(Duration.ofMillis(500)));
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(100);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      String head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + "a".repeat(200);
      long start = System.nanoTime();
      boolean closed = false;
      for (int i = 0; i < head.length() && !closed; i++) {
        try {
          out.write(head.charAt(i));
          out.flush();
        } catch (IOException e) {
          closed = true;
          break;
        }
        try {
          closed = in.read() == -1;   // waits 100 ms for the server: one byte per 100 ms
        } catch (SocketTimeoutException stillOpen) {
          // the connection is open; send the next byte
        } catch (IOException reset) {
          closed = true;
        }
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      assertThat(closed).as("the server closed the trickling connection").isTrue();
      assertThat(seconds).as("within two request timeouts").isLessThan(2.0);
    }
  }

  /**
   * Regression (issue 11, defect 8): Jetty's own refusals were HTML; every one that Jetty answers
   * is problem+json now, with about:blank and the status phrase.
   */
  @Test
  void framingErrors_areProblemJsonToo() throws Exception {
    server = SluiceServer.start(new Options().port(0));
    String[][] cases = {
        {"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nConnection: close\r\n\r\n", "400"},
        {"GET /" + "a".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "414"},
        {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(20_000) + "\r\nConnection: close\r\n\r\n", "431"},
        {"GET /healthz HTTP/7.1\r\nHost: x\r\nConnection: close\r\n\r\n", "505"},
        // an expectation other than 100-continue (RFC 9110 10.1.1); Jetty 12.0.16 closed such a
        // connection with no response at all (jetty/jetty.project#13583, fixed in 12.0.27)
        {"POST /v1/check HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 31\r\n\r\n"
            + "{\"policy\":\"demo\",\"key\":\"alice\"}", "417"},
    };
    for (String[] c : cases) {
      String r = exchange(c[0]);
      assertThat(r).as(c[1]).startsWith("HTTP/1.1 " + c[1]);
      assertThat(r).as(c[1]).containsIgnoringCase("Content-Type: application/problem+json");
      JsonNode p = body(r);
      assertThat(p.get("type").asText()).as(c[1]).isEqualTo("about:blank");
      assertThat(p.get("status").asInt()).as(c[1]).isEqualTo(Integer.parseInt(c[1]));
      assertThat(p.get("title").asText()).as(c[1])
          .isEqualTo(org.eclipse.jetty.http.HttpStatus.getMessage(Integer.parseInt(c[1])));
    }
  }

  /** Expect: 100-continue still works: the interim 100, then the decision, on one connection. */
  @Test
  void expect100Continue_getsTheInterimResponseThenTheDecision() throws Exception {
    server = SluiceServer.start(new Options().port(0));
    String body = "{\"policy\":\"demo\",\"key\":\"expects\"}";
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("POST /v1/check HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
          + "Connection: close\r\nContent-Length: " + body.length() + "\r\n\r\n")
          .getBytes(StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      byte[] interim = new byte[25];
      int n = 0;
      while (n < interim.length) {
        int r = s.getInputStream().read(interim, n, interim.length - n);
        assertThat(r).as("the interim response before the body is sent").isPositive();
        n += r;
      }
      assertThat(new String(interim, StandardCharsets.UTF_8)).isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
      s.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
      // the answer, read by its Content-Length (Jetty keeps this connection open)
      java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
      String r = "";
      int length = -1;
      while (length < 0 || got.size() < r.indexOf("\r\n\r\n") + 4 + length) {
        int b = s.getInputStream().read();
        assertThat(b).as("the answer ends early: %s", r).isNotNegative();
        got.write(b);
        r = got.toString(StandardCharsets.UTF_8);
        java.util.regex.Matcher m = java.util.regex.Pattern
            .compile("(?i)content-length: (\\d+)\r\n").matcher(r);
        if (length < 0 && r.contains("\r\n\r\n") && m.find()) {
          length = Integer.parseInt(m.group(1));
        }
      }
      assertThat(r).startsWith("HTTP/1.1 200 ");
      assertThat(body(r).get("allowed").asBoolean()).isTrue();
    }
  }

  /** 429 is a problem document of Sluice's own type whose extension members are the decision. */
  @Test
  void rejection_isAProblemWithTheDecision_andMalformedInputSaysNoParserInternals() throws Exception {
    server = SluiceServer.start(new Options().port(0));
    assertThat(status(exchange(check("{\"policy\":\"demo\",\"key\":\"a\"}")))).isEqualTo(200);
    String r = exchange(check("{\"policy\":\"demo\",\"key\":\"a\"}"));
    assertThat(r).startsWith("HTTP/1.1 429").contains("Content-Type: application/problem+json")
        .contains("Retry-After: ");
    JsonNode p = body(r);
    assertThat(p.get("type").asText()).isEqualTo("urn:sluice:problem:rate-limited");
    assertThat(p.get("title").asText()).isEqualTo("Rate limited");
    assertThat(p.get("status").asInt()).isEqualTo(429);
    assertThat(p.get("detail").asText()).contains("demo").contains("'a'");
    assertThat(p.get("allowed").asBoolean()).isFalse();
    assertThat(p.get("retryAfterSeconds").asDouble()).isPositive();

    String[][] kinds = {
        {"{\"policy\":\"nope\",\"key\":\"a\"}", "urn:sluice:problem:unknown-policy", "Unknown policy"},
        {"{\"policy\":\"demo\",\"key\":\"a\",\"cost\":-1}", "urn:sluice:problem:invalid-check", "Invalid check"},
        {"[" + "{\"policy\":\"demo\",\"key\":\"a\"},".repeat(100) + "{\"policy\":\"demo\",\"key\":\"a\"}]",
            "urn:sluice:problem:batch-too-large", "Batch too large"},
        {"{\"policy\":", "urn:sluice:problem:malformed-json", "Malformed JSON"},
    };
    for (String[] k : kinds) {
      JsonNode q = body(exchange(check(k[0])));
      assertThat(q.get("type").asText()).as(k[0]).isEqualTo(k[1]);
      assertThat(q.get("title").asText()).as(k[0]).isEqualTo(k[2]);
      assertThat(q.get("status").asInt()).as(k[0]).isEqualTo(400);
    }
    String dup = exchange(check("{\"policy\":\"demo\",\"key\":\"a\",\"key\":\"b\"}"));
    assertThat(status(dup)).as("duplicate fields are refused, not last-wins").isEqualTo(400);
    assertThat(body(dup).get("type").asText()).isEqualTo("urn:sluice:problem:malformed-json");
    assertThat(body(dup).get("detail").asText()).contains("Duplicate field 'key'");
    for (String bad : new String[] {"{\"policy\":\t\"demo\", \"key\": 'a'}", "{\"policy\": \"de\tmo\"}",
        "{\"cost\": 01}", "{\"key\": NaN}", "{\"policy\": \"demo\" \"key\": \"a\"}"}) {
      String m = exchange(check(bad));
      assertThat(status(m)).as(bad).isEqualTo(400);
      assertThat(body(m).get("detail").asText()).as(bad).doesNotContain("Feature")
          .doesNotContain("enable").contains("line 1");
    }
  }

  /**
   * Issue 11, defect 2 through the service: a flood of new keys leaves each policy at most its
   * maximumKeys (from the file), shown in /metrics.
   */
  @Test
  void floodOfNewKeys_staysWithinEachPolicysMaximumKeys() throws Exception {
    Path file = dir.resolve("p.yaml");
    Files.writeString(file, """
        policies:
          small:
            algorithm: leaky-bucket
            capacity: 5
            rate: 1/1h
            maximumKeys: 500
        """);
    server = SluiceServer.start(new Options().port(0).config(file).maxBatch(1000));
    for (int batch = 0; batch < 20; batch++) {
      StringBuilder b = new StringBuilder("[");
      for (int i = 0; i < 1000; i++) {
        b.append(i == 0 ? "" : ",").append("{\"policy\":\"small\",\"key\":\"k").append(batch)
            .append('-').append(i).append("\"}");
      }
      assertThat(status(exchange(check(b.append(']').toString())))).isEqualTo(200);
    }
    String metrics = metrics();
    assertThat(metrics).contains("sluice_keys{policy=\"small\"} 500\n")
        .contains("sluice_maximum_keys{policy=\"small\"} 500\n");
  }

  /**
   * Regression (issue 11, defect 5): limits out of range printed a stack trace at start and on
   * reload; now they are file:line problems, all at once, and a failed reload is counted.
   */
  @Test
  void limitsOutOfRange_areConfigProblems_atStartAndOnReload() throws Exception {
    Path file = dir.resolve("p.yaml");
    Files.writeString(file, "policies:\n  a: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}\n");
    server = SluiceServer.start(new Options().port(0).config(file).reloadEvery(Duration.ZERO));
    Files.writeString(file, """
        policies:
          a: {algorithm: leaky-bucket, capacity: 1, rate: 1/100000d}
          b: {algorithm: leaky-bucket, capacity: 1e30, rate: 1/s}
        """);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> server.reload())
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).hasSize(2)
            .anySatisfy(p -> assertThat(p).startsWith(file + ":2: policy 'a': "))
            .anySatisfy(p -> assertThat(p).startsWith(file + ":3: policy 'b': ")));
    String metrics = metrics();
    assertThat(metrics).contains("sluice_config_reloads_total{result=\"error\"} 1");
    assertThat(server.policyNames()).containsExactly("a");
  }

  /** A reload whose policies may hold more keys than the heap can is refused and counted. */
  @Test
  void reloadNeedingMoreHeapThanTheJvmHas_isRefused() throws Exception {
    Path file = dir.resolve("p.yaml");
    Files.writeString(file, "policies:\n  a: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}\n");
    server = SluiceServer.start(new Options().port(0).config(file).reloadEvery(Duration.ZERO));
    Files.writeString(file, """
        policies:
          a: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h, maximumKeys: 1000000000}
        """);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> server.reload())
        .isInstanceOf(ConfigException.class).hasMessageContaining("MiB of heap but this JVM has");
    String metrics = metrics();
    assertThat(metrics).contains("sluice_config_reloads_total{result=\"error\"} 1")
        .contains("sluice_maximum_keys{policy=\"a\"} 100000\n");
  }
}

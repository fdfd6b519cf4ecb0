package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import picocli.CommandLine;

/** The commands end to end, in-process: output, exit codes, files. */
class CommandsTest {
  @TempDir
  Path dir;

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  @Test
  void simulate_table_listsEveryAlgorithm() {
    assertThat(run("simulate", "burst")).isZero();
    assertThat(out.toString()).contains("leaky-meter", "leaky-queue", "token-bucket", "gcra",
        "fixed-window", "sliding-window", "first 100ms", "longest rejection run");
  }

  @Test
  void simulate_jsonAndCsv() {
    assertThat(run("simulate", "sustained", "--format", "json", "-a", "gcra,fixed-window")).isZero();
    com.fasterxml.jackson.databind.JsonNode json = readJson(out.toString());
    assertThat(json.at("/algorithms/0/algorithm").asText()).isEqualTo("gcra");
    assertThat(json.at("/algorithms/0/offered").asLong()).isEqualTo(600);
    assertThat(json.at("/algorithms/0/admitted").asLong()).isEqualTo(399);
    assertThat(json.at("/algorithms/1/algorithm").asText()).isEqualTo("fixed-window");
    assertThat(json.get("algorithms")).hasSize(2);
    out.getBuffer().setLength(0);
    assertThat(run("simulate", "--spec", "10 in 1s", "--format", "csv", "-a", "token-bucket")).isZero();
    assertThat(out.toString()).startsWith("algorithm,offered,admitted").contains("token-bucket,10,10,0");
  }

  private static com.fasterxml.jackson.databind.JsonNode readJson(String text) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper()
          .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .readTree(text);
    } catch (java.io.IOException e) {
      throw new AssertionError("not valid JSON: " + e.getMessage() + "\n" + text, e);
    }
  }

  /** Regression (issue 11, defect 9): a tab in the spec or a quote in a file name broke the JSON. */
  @Test
  void simulate_json_isValidWhateverTheSourceSays() throws Exception {
    assertThat(run("simulate", "--spec", "10 in\t1s", "--format", "json", "-a", "gcra")).isZero();
    assertThat(readJson(out.toString()).get("traffic").asText()).isEqualTo("10 in\t1s");
    out.getBuffer().setLength(0);
    Path csv = dir.resolve("odd \"name\"\t.csv");
    Files.writeString(csv, "0\n0.01\n");
    assertThat(run("simulate", "--csv", csv.toString(), "--format", "json", "-a", "gcra")).isZero();
    assertThat(readJson(out.toString()).get("traffic").asText()).contains("odd \"name\"\t.csv");
  }

  @Test
  void badInput_exitsWith2_andSaysWhy() {
    assertThat(run("simulate", "--spec", "200 in 1x")).isEqualTo(2);
    assertThat(err.toString()).contains("at position 9: expected a unit");
    assertThat(run("simulate", "nosuch")).isEqualTo(2);
    assertThat(err.toString()).contains("unknown scenario 'nosuch'");
    assertThat(run("simulate")).isEqualTo(2);
    assertThat(run("simulate", "burst", "--rate", "-1")).isEqualTo(2);
    assertThat(err.toString()).contains("--rate must be positive and finite but was -1");
    assertThat(run("simulate", "burst", "-a", "bogus")).isEqualTo(2);
    assertThat(run("simulate", "burst", "--format", "xml")).isEqualTo(2);
    // the three report commands share their output options (OutputOptions)
    for (String[] command : new String[][] {{"simulate", "fairness"}, {"fleet"}}) {
      String[] args = Arrays.copyOf(command, command.length + 2);
      args[command.length] = "--format";
      args[command.length + 1] = "xml";
      assertThat(run(args)).as(String.join(" ", command)).isEqualTo(2);
      assertThat(err.toString()).contains("--format must be table, csv or json but was 'xml'");
    }
    assertThat(run("simulate", "--csv", dir.resolve("missing.csv").toString())).isEqualTo(2);
    assertThat(err.toString()).contains("no such file");
    assertThat(run("simulate", "burst", "--unknown-option")).isEqualTo(2);
  }

  @Test
  void serve_badSettingsExitWith2_andSayWhy(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path bad = dir.resolve("bad.yaml");
    java.nio.file.Files.writeString(bad, "policies:\n  demo: {algorithm: leaky-bucket, rate: 1/s}\n");
    assertThat(run("serve", "--port", "0", "--config", bad.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("sluice serve: the configuration is not valid")
        .contains(bad + ":2: policy 'demo': a leaky-bucket needs 'capacity' and 'rate'");
    assertThat(run("serve", "--port", "0", "--store-failure", "maybe")).isEqualTo(2);
    assertThat(err.toString()).contains("--store-failure must be closed, open, fallback or local-share but was 'maybe'");
    assertThat(run("serve", "--port", "0", "--lease-share", "0.1")).isEqualTo(2);
    assertThat(err.toString()).contains("--lease-lifetime, --lease-share and --lease-instances need --leases");
    assertThat(run("serve", "--port", "0", "--leases", "--store-failure", "local-share")).isEqualTo(2);
    assertThat(err.toString()).contains("leases (--leases) applies to a shared store, and none was chosen");
    assertThat(run("serve", "--port", "0", "--redis", "redis://127.0.0.1:1", "--leases",
        "--lease-share", "2")).isEqualTo(2);
    assertThat(err.toString()).contains("lease excessShare must be in (0, 1] but was 2.0");
    assertThat(run("serve", "--port", "70000")).isEqualTo(2);
    assertThat(err.toString()).contains("port must be between 0 and 65535 but was 70000");
    assertThat(run("serve", "--port", "0", "--postgres", "postgres://x")).isEqualTo(2);
    assertThat(err.toString()).contains("jdbc:postgresql:");
    assertThat(run("serve", "--port", "0", "--mysql", "mysql://db/app")).isEqualTo(2);
    assertThat(err.toString()).contains("a MySQL or MariaDB JDBC URL starts with jdbc:mysql: or"
        + " jdbc:mariadb: but was 'mysql://db/app'");
    assertThat(run("serve", "--port", "0", "--postgres", "jdbc:postgresql://x/y", "--mysql",
        "jdbc:mysql://x/y")).isEqualTo(2);
    assertThat(err.toString()).contains("choose one of --redis, --redis-cluster, --postgres and --mysql");
    assertThat(run("serve", "--port", "0", "--mysql-pool-size", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("mysqlPoolSize must be between 1 and 1000 but was 0");
    // settings that depend on one another: every problem at once
    assertThat(run("serve", "--port", "0", "--store-timeout", "100ms", "--idle-timeout", "1s"))
        .isEqualTo(2);
    assertThat(err.toString())
        .contains("storeTimeout (--store-timeout) applies to a shared store, and none was chosen")
        .contains("idleTimeout (PT1S) must be at least requestTimeout (PT5S)");
    assertThat(run("serve", "--port", "0", "--reload-every", "soon")).isEqualTo(2);
    assertThat(err.toString()).contains("--reload-every must be a duration such as 250ms, 5s or 1m but was 'soon'");
    assertThat(run("serve", "--port", "0", "--redis", "redis://a", "--redis-cluster",
        "redis://b:7000,redis://c:7000")).isEqualTo(2);
    assertThat(err.toString()).contains("choose one of --redis, --redis-cluster, --postgres and --mysql");
    assertThat(run("serve", "--port", "0", "--grpc-port", "0", "--envoy-algorithm", "leaky"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("envoyAlgorithm must be leaky-bucket, token-bucket, gcra,"
        + " fixed-window or sliding-window but was 'leaky'");
    assertThat(run("serve", "--port", "0", "--grpc-port", "0", "--envoy-headers", "all"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("envoyHeaders must be none, ratelimit or ietf but was 'all'");
    assertThat(run("serve", "--port", "0", "--store-timeout", "soon")).isEqualTo(2);
    assertThat(err.toString()).contains("--store-timeout must be a duration such as 250ms, 5s or 1m but was 'soon'");
    assertThat(run("serve", "--port", "0", "--breaker-failure-rate", "1.5")).isEqualTo(2);
    assertThat(err.toString()).contains("circuit breaker failureRate must be in (0, 1] but was 1.5");
    assertThat(run("serve", "--port", "0", "--maximum-keys", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("maximumKeys must be between 1 and 1000000000 but was 0");
  }

  @Test
  void serve_printHeap_growsWithMaximumKeys(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    assertThat(run("serve", "--print-heap")).isZero();
    assertThat(out.toString().trim()).as("the sample with the defaults (docs/server.md)").isEqualTo("-Xmx626m");
    out.getBuffer().setLength(0);
    assertThat(run("serve", "--print-heap", "--maximum-keys", "1000")).isZero();
    long small = Long.parseLong(out.toString().trim().replace("-Xmx", "").replace("m", ""));
    out.getBuffer().setLength(0);
    assertThat(run("serve", "--print-heap", "--maximum-keys", "1000000")).isZero();
    long large = Long.parseLong(out.toString().trim().replace("-Xmx", "").replace("m", ""));
    assertThat(small).isGreaterThanOrEqualTo(96);
    // 4 sample policies (one a group, holding parents too) of 1,000,000 keys of up to 256 characters: more than a gigabyte
    assertThat(large).isGreaterThan(1000).isGreaterThan(small);
  }

  @Test
  void badInput_leavesNoPartialFile() throws Exception {
    Path csv = dir.resolve("in.csv");
    Files.writeString(csv, "0.1\n0.2\nbad\n");
    Path svg = dir.resolve("out.svg");
    assertThat(run("plot", "--csv", csv.toString(), "-o", svg.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("line 3, column 1");
    try (Stream<Path> files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("in.csv");
    }
  }

  @Test
  void plot_svg_isWellFormed_andHoldsTheSeriesItClaims() throws Exception {
    Path svg = dir.resolve("seed000.svg");
    assertThat(run("plot", "seed000", "-o", svg.toString(), "--png")).isZero();
    assertThat(out.toString()).as("says where the PNG went")
        .contains("wrote " + svg + " and " + dir.resolve("seed000.png"));
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    Document doc = f.newDocumentBuilder().parse(svg.toFile());
    assertThat(doc.getDocumentElement().getTagName()).isEqualTo("svg");
    NodeList groups = doc.getElementsByTagName("g");
    assertThat(groups.getLength()).isEqualTo(6);
    for (int i = 0; i < groups.getLength(); i++) {
      Element g = (Element) groups.item(i);
      String id = g.getAttribute("id");
      assertThat(id).startsWith("panel-");
      assertThat(count(g, "polyline", "level")).as(id).isEqualTo(1);
      assertThat(count(g, "line", "capacity")).as(id).isEqualTo(1);
      int marks = count(g, "circle", "arrival admitted") + count(g, "path", "arrival rejected")
          + count(g, "path", "arrival delayed");
      assertThat(marks).as(id + " marks every arrival").isEqualTo(5);
      assertThat(count(g, "line", "output")).as(id).isEqualTo(id.equals("panel-leaky-queue") ? 4 : 0);
    }
    Element meter = (Element) groups.item(0);
    assertThat(count(meter, "path", "arrival rejected")).as("two full events").isEqualTo(2);
    assertThat(Files.size(dir.resolve("seed000.png"))).isGreaterThan(1000);
    assertThat(Files.readAllBytes(dir.resolve("seed000.png"))).startsWith((byte) 0x89, (byte) 'P', (byte) 'N', (byte) 'G');
  }

  private static int count(Element g, String tag, String cssClass) {
    NodeList nodes = g.getElementsByTagName(tag);
    int n = 0;
    for (int i = 0; i < nodes.getLength(); i++) {
      if (((Element) nodes.item(i)).getAttribute("class").equals(cssClass)) {
        n++;
      }
    }
    return n;
  }
}

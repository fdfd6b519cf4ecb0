package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * sluice simulate tenants: the experiment docs/concurrency.md reports ("Fair queuing"). With its
 * stock settings fair queuing meets the bar in both scenarios and first in, first out misses it;
 * undersized queues miss it, as the docs' sizing rule says; the docs' table is the command's
 * output.
 */
class TenantsCommandTest {
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    out.getBuffer().setLength(0);
    err.getBuffer().setLength(0);
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  /** Each row of the JSON by tenants, then strategy. */
  private Map<String, JsonNode> rows() throws Exception {
    Map<String, JsonNode> all = new HashMap<>();
    for (JsonNode n : new ObjectMapper().readTree(out.toString())) {
      all.put(n.get("tenants").asInt() + " " + n.get("strategy").asText(), n);
    }
    return all;
  }

  @Test
  void fairQueuingMeetsTheBar_inBothScenarios_andFirstInFirstOutMissesIt() throws Exception {
    assertThat(run("simulate", "tenants", "--format", "json")).isZero();
    Map<String, JsonNode> r = rows();
    assertThat(r).hasSize(8);
    for (int tenants : new int[] {100, 10_000}) {
      JsonNode fair = r.get(tenants + " fair queuing");
      assertThat(fair.get("meetsBar").asBoolean()).as(fair.toString()).isTrue();
      assertThat(fair.get("worstQuietShare").asDouble()).isGreaterThanOrEqualTo(0.90);
      assertThat(fair.get("quietP99WaitMs").asDouble())
          .isLessThanOrEqualTo(2 * fair.get("calmP99WaitMs").asDouble());
      assertThat(fair.get("busy").asDouble()).isGreaterThanOrEqualTo(0.95);
      assertThat(fair.get("floodShare").asDouble()).as("the flood gets what is left")
          .isBetween(0.5, 0.7);
      JsonNode fifo = r.get(tenants + " FIFO");
      assertThat(fifo.get("meetsBar").asBoolean()).isFalse();
      assertThat(fifo.get("quietP99WaitMs").asDouble()).as("a flood fills the FIFO queue")
          .isGreaterThan(5 * fifo.get("calmP99WaitMs").asDouble());
      assertThat(r).containsKeys(tenants + " LIFO", tenants + " Netflix partitions");
      assertThat(r.get(tenants + " Netflix partitions").get("meetsBar").asBoolean()).isFalse();
    }
  }

  /** docs/concurrency.md: hands dealt from too few queues (tenants x hand / queues of 9 and 20). */
  @Test
  void undersizedQueues_missTheBar() throws Exception {
    assertThat(run("simulate", "tenants", "--scenario", "large", "--queues", "4096", "--hand",
        "8", "--format", "json")).isZero();
    assertThat(rows().get("10000 fair queuing").get("meetsBar").asBoolean()).isFalse();
    assertThat(run("simulate", "tenants", "--scenario", "small", "--queues", "64", "--hand",
        "6", "--format", "json")).isZero();
    assertThat(rows().get("100 fair queuing").get("meetsBar").asBoolean()).isFalse();
  }

  /** The table in docs/concurrency.md is what the command prints, line for line. */
  @Test
  void theDocsTable_isTheCommandsOutput() throws Exception {
    assertThat(run("simulate", "tenants")).isZero();
    String doc = Files.readString(Path.of("../docs/concurrency.md"));
    for (String line : out.toString().split("\n")) {
      if (!line.isBlank()) {
        assertThat(doc).as("docs/concurrency.md has the line").contains(line.stripTrailing());
      }
    }
  }

  @Test
  void badInput_isNamed_withExitStatus2() {
    assertThat(run("simulate", "tenants", "--scenario", "huge")).isEqualTo(2);
    assertThat(err.toString()).contains("--scenario must be small, large or both but was 'huge'");
    assertThat(run("simulate", "tenants", "--seconds", "5")).isEqualTo(2);
    assertThat(err.toString()).contains("--seconds must be between 10 and 3600 but was 5");
    assertThat(run("simulate", "tenants", "--hand", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--hand must be between 1 and 16 (at most the queues,"
        + " 256) but was 0");
    assertThat(run("simulate", "tenants", "--queues", "70000")).isEqualTo(2);
    assertThat(err.toString()).contains("--queues must be between 1 and 65536 but was 70000");
    assertThat(run("simulate", "tenants", "--memory", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--memory must be between 0.001 and 86400 seconds but"
        + " was 0");
    assertThat(run("simulate", "tenants", "--format", "csv")).isEqualTo(2);
    assertThat(err.toString()).contains("--format must be table or json for simulate tenants");
  }
}

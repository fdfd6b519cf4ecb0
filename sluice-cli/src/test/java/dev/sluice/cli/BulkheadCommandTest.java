package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * sluice simulate bulkhead: Little's law sizes the limit (rate x p99), the healthy phase admits
 * nearly everything, and a backend five times slower is held to the limit, admitting what
 * Little's law says it can (limit / mean latency), where unlimited traffic would pile up.
 */
class BulkheadCommandTest {
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

  @Test
  void littlesLaw_sizesTheLimit_andASlowBackendIsHeldToIt() throws Exception {
    assertThat(run("simulate", "bulkhead", "--rate", "200", "--p50", "40ms", "--p99", "80ms",
        "--seconds", "30", "--format", "json")).isZero();
    JsonNode r = new ObjectMapper().readTree(out.toString());
    assertThat(r.get("limit").asInt()).isEqualTo(16);   // 200/s x 0.08 s
    double mean = r.get("meanLatencyMs").asDouble() / 1000;
    JsonNode healthy = r.at("/phases/0");
    assertThat(healthy.get("offered").asLong()).isBetween(5700L, 6300L);   // 200/s for 30 s
    assertThat(healthy.get("admitted").asDouble() / healthy.get("offered").asDouble())
        .as("a limit of rate x p99 admits nearly all healthy traffic").isGreaterThan(0.98);
    assertThat(healthy.get("meanInFlight").asDouble()).as("Little's law: 200/s x mean latency")
        .isBetween(200 * mean * 0.9, 200 * mean * 1.1);
    JsonNode slow = r.at("/phases/1");
    assertThat(slow.get("maxInFlight").asInt()).isLessThanOrEqualTo(16);
    assertThat(slow.get("admittedPerSecond").asDouble())
        .as("a full bulkhead serves limit / mean latency").isBetween(16 / (5 * mean) * 0.85,
            16 / (5 * mean) * 1.02);
    assertThat(slow.get("unlimitedMeanInFlight").asDouble())
        .as("with no limit, in flight is rate x the slow mean latency")
        .isBetween(200 * 5 * mean * 0.9, 200 * 5 * mean * 1.1);
  }

  @Test
  void theTable_namesTheLimitAndEachPhase() {
    assertThat(run("simulate", "bulkhead", "--rate", "100", "--p50", "10ms", "--p99", "50ms",
        "--seconds", "5")).isZero();
    assertThat(out.toString()).contains("limit: 5 permits (Little's law: rate x p99, rounded up")
        .contains("healthy").contains("slow x5");
  }

  @Test
  void badInput_exits2_namingTheOption() {
    assertThat(run("simulate", "bulkhead", "--rate", "0", "--p50", "1ms", "--p99", "2ms"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("--rate must be above 0");
    assertThat(run("simulate", "bulkhead", "--rate", "10", "--p50", "50ms", "--p99", "5ms"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("--p99 (5ms) must be at least --p50 (50ms)");
    assertThat(run("simulate", "bulkhead", "--rate", "10", "--p50", "soon", "--p99", "5ms"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("--p50 must be a duration").contains("'soon'");
    assertThat(run("simulate", "bulkhead", "--rate", "10", "--p50", "5ms", "--p99", "5ms",
        "--slowdown", "0.5")).isEqualTo(2);
    assertThat(err.toString()).contains("--slowdown must be between 1 and 1000");
  }
}

package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** sluice fleet: seed 002's market open in central and fleet mode, and the figures of issue 13. */
class FleetCommandTest {
  @TempDir
  Path dir;

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
  void marketOpen_centralModeFailsOpen_fleetModeHoldsTheLimitWithinTheBound() throws Exception {
    assertThat(run("fleet", "--seconds", "8", "--format", "json")).isZero();
    JsonNode runs = new ObjectMapper().readTree(out.toString());
    JsonNode central = runs.get(0);
    JsonNode fleet = runs.get(1);
    assertThat(central.get("mode").asText()).isEqualTo("central");
    // the incident: the store saturates, calls time out, the breaker opens, and fail-open lets
    // everything through to a backend sized for 80,000/s
    assertThat(central.get("steadyAdmittedPerOracle").asDouble()).isGreaterThan(3.0);
    assertThat(central.get("steadyStoreCallP99Millis").asDouble()).isGreaterThanOrEqualTo(8.0);
    assertThat(central.get("degraded").asLong()).isGreaterThan(500_000);
    // the fix, with the figures issue 13 asks for
    assertThat(fleet.get("mode").asText()).isEqualTo("fleet");
    assertThat(fleet.get("steadyAdmittedPerOracle").asDouble()).isBetween(0.97, 1.01);
    assertThat(fleet.get("maxExcessShareOfLimit").asDouble()).isLessThanOrEqualTo(0.01);
    assertThat(fleet.get("secondsTo95PercentOfLimit").asDouble()).isLessThanOrEqualTo(1.0);
    assertThat(fleet.get("steadyStoreCallsPerSecondPerInstance").asDouble()).isLessThanOrEqualTo(300);
    assertThat(fleet.get("steadyStoreCallP99Millis").asDouble()).isLessThan(1.0);
    assertThat(fleet.get("degraded").asLong()).isZero();
    assertThat(fleet.get("unitsStranded").asLong()).isZero();
    assertThat(fleet.get("unitsGranted").asLong())
        .isEqualTo(fleet.get("unitsSpent").asLong() + fleet.get("unitsReturned").asLong());
    // every decision was local but the first of each gateway, before its key was known to be hot
    assertThat(fleet.get("admitted").asLong() - fleet.get("unitsSpent").asLong())
        .isBetween(0L, 50L * 100);
  }

  @Test
  void skewedGateways_stayWithinTheBound() throws Exception {
    assertThat(run("fleet", "--mode", "fleet", "--seconds", "7", "--skew", "10:3", "--format", "json")).isZero();
    JsonNode fleet = new ObjectMapper().readTree(out.toString()).get(0);
    assertThat(fleet.get("maxExcessShareOfLimit").asDouble()).isLessThanOrEqualTo(0.01);
    assertThat(fleet.get("steadyAdmittedPerOracle").asDouble()).isBetween(0.97, 1.01);
  }

  @Test
  void storeOutage_failClosedSpendsOnlyWhatWasLeased_localShareAdmitsItsShareOfTheLimit()
      throws Exception {
    String[] outage = {"fleet", "--mode", "fleet", "--seconds", "14", "--outage-at", "7",
        "--outage-seconds", "5", "--format", "json", "--fleet-policy"};
    assertThat(run(concat(outage, "fail-closed"))).isZero();
    JsonNode closed = new ObjectMapper().readTree(out.toString()).get(0);
    assertThat(closed.get("leaseBound").asLong()).isEqualTo(800);
    assertThat(closed.get("outageAdmitted").asLong()).as("no more than the leases held or in flight")
        .isLessThanOrEqualTo(closed.get("leaseBound").asLong());
    assertThat(run(concat(outage, "local-share"))).isZero();
    JsonNode share = new ObjectMapper().readTree(out.toString()).get(0);
    assertThat(share.get("outageAdmittedPerLimit").asDouble()).isBetween(0.97, 1.01);
    assertThat(share.get("unitsReconciled").asLong()).as("charged once the store was back").isPositive();
    assertThat(share.get("maxExcessShareOfLimit").asDouble()).isLessThanOrEqualTo(0.01);
  }

  private static String[] concat(String[] a, String b) {
    String[] r = java.util.Arrays.copyOf(a, a.length + 1);
    r[a.length] = b;
    return r;
  }

  @Test
  void sameSeed_sameRun_everyHundredMilliseconds() {
    String[] args = {"fleet", "--seconds", "2", "--step-at", "1", "--peak-rate", "100000", "--format", "csv"};
    assertThat(run(args)).isZero();
    String first = out.toString();
    assertThat(first).startsWith("mode,t_ms,offered,admitted,oracle,store_calls");
    assertThat(first.lines().filter(l -> l.startsWith("fleet,")).count()).isEqualTo(20);
    assertThat(run(args)).isZero();
    assertThat(out.toString()).isEqualTo(first);
    assertThat(run("fleet", "--seconds", "2", "--step-at", "1", "--peak-rate", "100000", "--format",
        "csv", "--seed", "2")).isZero();
    assertThat(out.toString()).isNotEqualTo(first);
  }

  @Test
  void plot_drawsAPanelPerMode() throws Exception {
    Path svg = dir.resolve("market-open.svg");
    assertThat(run("fleet", "--seconds", "2", "--step-at", "1", "--plot", svg.toString())).isZero();
    String text = Files.readString(svg);
    assertThat(text).contains("id=\"panel-central\"", "id=\"panel-fleet\"", "class=\"admitted\"",
        "class=\"latency\"", "class=\"limit\"");
  }

  @Test
  void badInput_exitsTwo_namingTheValue() {
    assertThat(run("fleet", "--mode", "sideways")).isEqualTo(2);
    assertThat(err.toString()).contains("--mode must be both, central or fleet but was 'sideways'");
    assertThat(run("fleet", "--skew", "60:3")).isEqualTo(2);
    assertThat(err.toString()).contains("--skew K:F needs 0 <= K <= --instances");
    assertThat(run("fleet", "--share", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("lease excessShare must be in (0, 1] but was 0.0");
    assertThat(run("fleet", "--limit", "-5")).isEqualTo(2);
    assertThat(err.toString()).contains("--limit must be positive and finite but was -5");
    assertThat(run("plot", "market-open")).isEqualTo(2);
    assertThat(err.toString()).contains("market-open is a fleet of gateways, not one key's traffic:"
        + " run sluice fleet (--plot FILE draws it)");
    assertThat(run("fleet", "--clients", "-1")).isEqualTo(2);
    assertThat(err.toString()).contains("--clients must be between 0 and 1000000 but was -1");
    assertThat(run("fleet", "--plot", "x.gif")).isEqualTo(2);
    assertThat(err.toString()).contains("--plot must name a .svg or .png file");
  }
}

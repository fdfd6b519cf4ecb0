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
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * sluice simulate overload: the experiment docs/concurrency.md reports. With its stock settings,
 * on both variants of the drop, Sluice's gradient limit meets issue 28's bar (the figures the
 * docs' table prints), no limit collapses, and the figures of every strategy are there.
 */
class OverloadCommandTest {
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

  private Map<String, JsonNode> byStrategy(String variant) throws Exception {
    Map<String, JsonNode> all = new HashMap<>();
    for (JsonNode n : new ObjectMapper().readTree(out.toString())) {
      if (n.get("variant").asText().equals(variant)) {
        all.put(n.get("strategy").asText(), n);
      }
    }
    return all;
  }

  @Test
  void theGradientLimitMeetsTheBar_onBothVariants_andNoLimitCollapses() throws Exception {
    assertThat(run("simulate", "overload", "--format", "json")).isZero();
    for (String variant : new String[] {"workers_die", "slower"}) {
      Map<String, JsonNode> r = byStrategy(variant);
      assertThat(r).containsKeys("no limit", "client rate limit", "fixed limit 100",
          "Sluice AIMD", "Sluice gradient", "Netflix Gradient2", "Netflix Gradient2 max 1000",
          "Netflix Vegas", "Netflix AIMD", "Netflix AIMD max 1000");
      JsonNode g = r.get("Sluice gradient");
      assertThat(g.get("meetsBar").asBoolean()).as(variant + ": " + g).isTrue();
      assertThat(g.get("degradedGoodput").asDouble()).isGreaterThanOrEqualTo(0.95);
      assertThat(g.get("worstAfterDrop").asDouble()).isGreaterThanOrEqualTo(0.90);
      assertThat(g.get("steadyRefused").asDouble()).isLessThan(0.01);
      assertThat(g.get("criticalServed").asDouble()).isGreaterThanOrEqualTo(0.999);
      assertThat(r.get("no limit").get("degradedGoodput").asDouble())
          .as("with no limit the backend's queue grows without end").isLessThan(0.1);
      assertThat(r.get("no limit").get("meetsBar").asBoolean()).isFalse();
    }
  }

  @Test
  void theRetryStorm_andThePlot() throws Exception {
    assertThat(run("simulate", "overload", "--variant", "slower", "--retries", "--format",
        "json")).isZero();
    assertThat(byStrategy("slower").get("Sluice gradient").get("meetsBar").asBoolean()).isTrue();
  }

  /**
   * docs/concurrency.md's retry budget rows: within a budget of 0.1 the storm's amplification is
   * contained (no limit's p99 while degraded falls from about 52 s to 18 s, Netflix Gradient2's
   * steady refusals from 77% to 42%), and the gradient limit still meets the bar.
   */
  @Test
  void aRetryBudget_containsTheStorm() throws Exception {
    assertThat(run("simulate", "overload", "--variant", "workers-die", "--retries", "--format",
        "json")).isZero();
    Map<String, JsonNode> storm = byStrategy("workers_die");
    assertThat(run("simulate", "overload", "--variant", "workers-die", "--retries",
        "--retry-budget", "0.1", "--format", "json")).isZero();
    Map<String, JsonNode> budget = byStrategy("workers_die");
    assertThat(storm.get("no limit").get("degradedP99Ms").asDouble()).isGreaterThan(50_000);
    assertThat(budget.get("no limit").get("degradedP99Ms").asDouble()).isLessThan(20_000);
    assertThat(storm.get("Netflix Gradient2").get("steadyRefused").asDouble()).isGreaterThan(0.7);
    assertThat(budget.get("Netflix Gradient2").get("steadyRefused").asDouble()).isLessThan(0.45);
    assertThat(budget.get("Sluice gradient").get("meetsBar").asBoolean()).isTrue();
    assertThat(run("simulate", "overload", "--retry-budget", "0.1")).isEqualTo(2);
    assertThat(err.toString()).contains("--retry-budget needs --retries");
  }

  /**
   * The CPU variant (docs/health.md): on 32 cores, with the neighbour taking half of them, the
   * health shedder in front of Sluice's gradient meets the bar with and without a retry storm;
   * the shedder alone on CPU pressure meets it without retries and misses the p99 in the storm
   * (a utilization signal does not bound the backend's queue); no limit collapses.
   */
  @Test
  void theCpuVariant_theHealthShedderAndTheGradientMeetTheBar_withAndWithoutRetries()
      throws Exception {
    assertThat(run("simulate", "overload", "--variant", "cpu", "--format", "json")).isZero();
    Map<String, JsonNode> r = byStrategy("cpu");
    assertThat(r).containsKeys("no limit", "fixed limit 32", "Sluice gradient",
        "Netflix Gradient2", "Netflix Vegas", "Netflix AIMD", "health: cpu.pressure",
        "health: container.cpu", "health + Sluice gradient");
    assertThat(r.get("health + Sluice gradient").get("meetsBar").asBoolean())
        .as(r.get("health + Sluice gradient").toString()).isTrue();
    assertThat(r.get("health: cpu.pressure").get("meetsBar").asBoolean()).isTrue();
    assertThat(r.get("health: cpu.pressure").get("criticalServed").asDouble())
        .isGreaterThanOrEqualTo(0.999);
    assertThat(r.get("no limit").get("degradedGoodput").asDouble()).isLessThan(0.1);
    assertThat(run("simulate", "overload", "--variant", "cpu", "--retries", "--format", "json"))
        .isZero();
    r = byStrategy("cpu");
    assertThat(r.get("health + Sluice gradient").get("meetsBar").asBoolean())
        .as(r.get("health + Sluice gradient").toString()).isTrue();
    JsonNode alone = r.get("health: cpu.pressure");
    assertThat(alone.get("meetsBar").asBoolean()).as(alone.toString()).isFalse();
    assertThat(alone.get("degradedP99Ms").asDouble()).isGreaterThan(120);
  }

  /** docs/health.md's smaller hosts: 16 cores, the health rows meet the bar; 8, no row does. */
  @Test
  void theCpuVariant_onSmallerHosts() throws Exception {
    assertThat(run("simulate", "overload", "--variant", "cpu", "--workers", "16", "--format",
        "json")).isZero();
    Map<String, JsonNode> r = byStrategy("cpu");
    for (String health : new String[] {"health: cpu.pressure", "health: container.cpu",
        "health + Sluice gradient"}) {
      assertThat(r.get(health).get("meetsBar").asBoolean()).as(r.get(health).toString()).isTrue();
    }
    assertThat(run("simulate", "overload", "--variant", "cpu", "--workers", "8", "--format",
        "json")).isZero();
    assertThat(byStrategy("cpu").values()).allSatisfy(n ->
        assertThat(n.get("meetsBar").asBoolean()).as(n.toString()).isFalse());
  }

  /**
   * The CPU variant's backend shares its cores: with no contention (a light load, no
   * neighbour's share matters) a call takes its own CPU time, so the steady p99 is the service's;
   * and the table names the cores and threads.
   */
  @Test
  void theCpuVariant_aCallAloneTakesItsCpuTime_andTheTableNamesTheCores() throws Exception {
    assertThat(run("simulate", "overload", "--variant", "cpu", "--load", "0.2", "--format",
        "json")).isZero();
    JsonNode none = byStrategy("cpu").get("no limit");
    assertThat(none.get("steadyP99Ms").asDouble()).isBetween(50.0, 70.0);
    assertThat(none.get("degradedP99Ms").asDouble()).as("40% of the half left: little contention")
        .isLessThan(90.0);
    assertThat(run("simulate", "overload", "--variant", "cpu", "--workers", "8")).isZero();
    assertThat(out.toString()).contains("a neighbour takes half the CPU: 8 cores (64 threads)");
  }

  @Test
  void drawsTheLimitAndTheLatency(@TempDir Path dir) throws Exception {
    Path svg = dir.resolve("overload.svg");
    assertThat(run("simulate", "overload", "--variant", "workers-die", "--plot", svg.toString()))
        .isZero();
    assertThat(out.toString()).contains("half the workers die").contains("Sluice gradient")
        .contains("meets it");
    String drawn = Files.readString(svg);
    assertThat(drawn).startsWith("<?xml").contains("class=\"series\"")
        .contains("half the workers die: limit");
  }

  @Test
  void badInput_isNamed_withExitStatus2() {
    assertThat(run("simulate", "overload", "--variant", "sideways")).isEqualTo(2);
    assertThat(err.toString()).contains("--variant must be workers-die, slower, both or cpu but"
        + " was 'sideways'");
    assertThat(run("simulate", "overload", "--median", "50ms", "--p99", "20ms")).isEqualTo(2);
    assertThat(err.toString()).contains("--p99 (20ms) must be at least --median (50ms)");
    assertThat(run("simulate", "overload", "--workers", "1")).isEqualTo(2);
    assertThat(err.toString()).contains("--workers must be between 2 and 10000 but was 1");
    assertThat(run("simulate", "overload", "--stall", "250ms")).isEqualTo(2);
    assertThat(err.toString()).contains("--stall-every and --stall go together");
    assertThat(run("simulate", "overload", "--stall-every", "1s", "--stall", "2s")).isEqualTo(2);
    assertThat(err.toString()).contains("--stall (2s) must be shorter than --stall-every (1s)");
  }

  /**
   * Stalls of the host (arrivals in a stall reach the limiter when it ends; calls in service take
   * that much longer), and callers that wait: named in the table, and the stalls show in the
   * latency. What the gradient does under them is OverloadSettingsTest's.
   */
  @Test
  void hostStalls_showInTheLatency_andAreNamed() throws Exception {
    String[] base = {"simulate", "overload", "--workers", "8", "--median", "50ms", "--p99",
        "100ms", "--load", "0.72", "--variant", "slower", "--deadline", "1s"};
    assertThat(run(base)).isZero();
    assertThat(out.toString()).doesNotContain("host stalls");
    String plain = csvOf(base);
    String[] stalled = java.util.Arrays.copyOf(base, base.length + 4);
    System.arraycopy(new String[] {"--stall-every", "2s", "--stall", "250ms"}, 0, stalled,
        base.length, 4);
    assertThat(run(stalled)).isZero();
    assertThat(out.toString()).contains("host stalls of 250 ms about every 2 s");
    String withStalls = csvOf(stalled);
    assertThat(meanOf(withStalls, "fixed limit 8", 7, 40, 90))
        .as("p99 with stalls, degraded minute").isGreaterThan(meanOf(plain, "fixed limit 8",
            7, 40, 90));
    String[] waiting = java.util.Arrays.copyOf(base, base.length + 1);
    waiting[base.length] = "--wait";
    assertThat(run(waiting)).isZero();
    assertThat(out.toString()).contains("waits up to the deadline");
  }

  private String csvOf(String[] args) {
    String[] csv = java.util.Arrays.copyOf(args, args.length + 2);
    csv[args.length] = "--format";
    csv[args.length + 1] = "csv";
    assertThat(run(csv)).isZero();
    return out.toString();
  }

  /** The mean of column {@code col} of a strategy's rows for seconds [from, to). */
  private static double meanOf(String csv, String strategy, int col, int from, int to) {
    double sum = 0;
    int n = 0;
    for (String line : csv.split("\n")) {
      String[] f = line.split(",");
      if (f.length >= col && f[2].equals("\"" + strategy + "\"")) {
        int second = Integer.parseInt(f[3]);
        if (second >= from && second < to) {
          sum += Double.parseDouble(f[col - 1]);
          n++;
        }
      }
    }
    assertThat(n).isPositive();
    return sum / n;
  }
}

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

/** sluice simulate fairness: seed 002's example, the figures docs/algorithms.md gives. */
class FairnessCommandTest {
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
  void aloneTakesTheService_twoShareIt_tenGetTheirAssuredRates_perClientLimitsWaste() throws Exception {
    assertThat(run("simulate", "fairness", "--phase-seconds", "4", "--format", "json")).isZero();
    JsonNode r = new ObjectMapper().readTree(out.toString());
    JsonNode phases = r.get("phases");
    assertThat(phases.get(0).at("/group/0").asDouble()).as("A alone").isBetween(980.0, 1020.0);
    assertThat(phases.get(0).at("/perClient/0").asDouble()).as("A alone, per-client limit")
        .isBetween(95.0, 105.0);
    for (int c = 0; c < 2; c++) {
      assertThat(phases.get(1).at("/group/" + c).asDouble()).as("A and B: %s", c)
          .isBetween(440.0, 560.0);
    }
    for (int c = 0; c < 10; c++) {
      assertThat(phases.get(2).at("/group/" + c).asDouble()).as("ten clients: %s", c)
          .isBetween(90.0, 110.0);
    }
    assertThat(r.get("mostBeyondRate").asDouble()).as("the exact bound, over the whole run")
        .isLessThanOrEqualTo(r.get("parentCapacity").asDouble());
    assertThat(r.get("groupBorrowed").asLong()).isPositive();
  }

  @Test
  void table_csv_andPlot_andTheSameRunForTheSameSeed() throws Exception {
    assertThat(run("simulate", "fairness", "--phase-seconds", "2", "--clients", "1,3")).isZero();
    String table = out.toString();
    assertThat(table).contains("A alone", "3 clients", "per-client limits",
        "in any interval of whole 100 ms bins", ": within");
    assertThat(run("simulate", "fairness", "--phase-seconds", "2", "--clients", "1,3")).isZero();
    assertThat(out.toString()).isEqualTo(table);
    Path csv = dir.resolve("f.csv");
    Path svg = dir.resolve("f.svg");
    assertThat(run("simulate", "fairness", "--phase-seconds", "2", "--clients", "2",
        "--format", "csv", "-o", csv.toString(), "--plot", svg.toString())).isZero();
    String[] lines = Files.readString(csv).split("\n");
    assertThat(lines[0]).isEqualTo("time_s,client,offered,group,group_rate_per_s,per_client,"
        + "per_client_rate_per_s");
    assertThat(lines).hasSize(1 + 20 * 2);
    String plot = Files.readString(svg);
    assertThat(plot).contains("id=\"panel-group\"", "id=\"panel-per-client\"", "client-A",
        "client-B");
  }

  @Test
  void unequalDemand_sharesBorrowingByDemand_andACeilingEvensIt() throws Exception {
    assertThat(run("simulate", "fairness", "--phase-seconds", "4", "--clients", "2",
        "--offered", "2000,600", "--format", "json")).isZero();
    JsonNode first = new ObjectMapper().readTree(out.toString()).at("/phases/0/group");
    assertThat(first.get(0).asDouble()).as("A asks more, borrows more").isGreaterThan(650);
    assertThat(first.get(1).asDouble()).as("B: its assured 100 and some").isBetween(150.0, 350.0);
    assertThat(run("simulate", "fairness", "--phase-seconds", "4", "--clients", "2",
        "--offered", "2000,600", "--ceiling", "500", "--format", "json")).isZero();
    JsonNode capped = new ObjectMapper().readTree(out.toString()).at("/phases/0/group");
    assertThat(capped.get(0).asDouble()).isBetween(480.0, 520.0);
    assertThat(capped.get(1).asDouble()).isBetween(480.0, 520.0);
  }

  @Test
  void badInput_exits2_namingTheValue() {
    assertThat(run("simulate", "fairness", "--assured", "2000")).isEqualTo(2);
    assertThat(err.toString()).contains("--assured 2000 exceeds --total 1000");
    assertThat(run("simulate", "fairness", "--clients", "1,13")).isEqualTo(2);
    assertThat(err.toString()).contains("--clients: each phase has 1 to 12 clients but one has 13");
    assertThat(run("simulate", "fairness", "--reserve", "100")).isEqualTo(2);
    assertThat(err.toString()).contains("--reserve must be at least 0 and below the service's"
        + " capacity 100 but was 100");
    assertThat(run("simulate", "fairness", "--offered", "-5")).isEqualTo(2);
    assertThat(err.toString()).contains("--offered must be positive and finite but was -5");
    assertThat(run("simulate", "fairness", "--plot", "x.gif")).isEqualTo(2);
    assertThat(err.toString()).contains("--plot must name a .svg or .png file but was 'x.gif'");
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dashboard check finds a metric that is not exported, and a label a metric lacks. */
class DashboardsTest {
  private static final String EXPOSITION = """
      # TYPE sluice_decisions_total counter
      sluice_decisions_total{policy="api",outcome="allowed"} 3
      sluice_concurrency_permits_held 1
      """;

  @TempDir
  Path dir;

  private Path dashboard(String expr) throws Exception {
    Path p = dir.resolve("d.json");
    Files.writeString(p, "{\"panels\": [{\"targets\": [{\"expr\": \"" + expr.replace("\"", "\\\"")
        + "\"}]}]}");
    return p;
  }

  @Test
  void aGoodQuery_passes_andBadOnesAreNamed() throws Exception {
    assertThatCode(() -> Dashboards.assertMatches(dashboard(
        "sum by (policy) (rate(sluice_decisions_total{outcome=\"allowed\"}[5m]))"), EXPOSITION))
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> Dashboards.assertMatches(dashboard(
        "rate(sluice_decision_total[5m])"), EXPOSITION))
        .hasMessageContaining("'sluice_decision_total' is not exported");
    assertThatThrownBy(() -> Dashboards.assertMatches(dashboard(
        "rate(sluice_decisions_total{limiter=\"api\"}[5m])"), EXPOSITION))
        .hasMessageContaining("'sluice_decisions_total' has no label 'limiter'");
    assertThatThrownBy(() -> Dashboards.assertMatches(dashboard(
        "sum by (limit) (sluice_concurrency_permits_held)"), EXPOSITION))
        .hasMessageContaining("groups by 'limit', which no metric of the query has");
  }
}

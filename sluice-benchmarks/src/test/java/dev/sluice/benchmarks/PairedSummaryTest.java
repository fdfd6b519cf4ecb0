package dev.sluice.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PairedSummaryTest {

  @Test
  void groupsEachRunsRatioOfTotals_byItsSetting_andKeptSummariesAsTheHotKeysOneCaller() {
    List<String> lines = List.of(
        "# MysqlPairedLoad ...",
        "#   flush 123.7 µs: median 2.04, lowest 1.65, highest 2.63, ratio of totals 2.06 (83774 / 40578); rounds below 2: 12",
        "#   (no option) flush 95.6 µs: median 1.79, ratio of totals 1.82 (78545 / 43064); rounds below 2: 25",
        "### 4472ba8 options useServerPrepStmts=true server (defaults)",
        "mysql: jdbc:mariadb://127.0.0.1:1/sluice_paired?user=root&password=&useServerPrepStmts=true,"
            + " 30 rounds of 1 s each, hot keys, 1 callers, 2 cores, server options (defaults)",
        "    0         2804         1218     2.30",
        "sluice / bucket4j over 30 rounds: median 2.03, lowest 1.76, highest 2.38, ratio of totals 1.97 (9 / 4); rounds below 2: 11",
        "mysql: jdbc:mariadb://127.0.0.1:1/sluice_paired?user=root&password=&useServerPrepStmts=true,"
            + " 30 rounds of 1 s each, hot keys, 1 callers, 2 cores, server options"
            + " --innodb-flush-log-at-trx-commit=2",
        "sluice / bucket4j over 30 rounds: median 2.83, ratio of totals 2.83 (1 / 1); rounds below 2: 1",
        "mysql: jdbc:mariadb://127.0.0.1:1/sluice_paired?user=root&password=,"
            + " 30 rounds of 1 s each, 100000 keys, 16 callers, 2 cores, server options (defaults)",
        "sluice / bucket4j over 30 rounds: ratio of totals 4.5 (1 / 1); rounds below 2: 0");

    Map<String, List<Double>> ratios = PairedSummary.ratios(lines);

    assertThat(ratios).containsExactly(
        Map.entry("hot keys, 1 callers, server-prepared, durable", List.of(2.06, 1.97)),
        Map.entry("hot keys, 1 callers, text, durable", List.of(1.82)),
        Map.entry("hot keys, 1 callers, server-prepared, flushed once a second", List.of(2.83)),
        Map.entry("100000 keys, 16 callers, text, durable", List.of(4.5)));
  }

  @Test
  void aRatioBeforeAnyRunsFirstLine_isAnError() {
    assertThatThrownBy(() -> PairedSummary.ratios(List.of("ratio of totals 2.00 (2 / 1)")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ratio of totals 2.00");
  }

  @Test
  void lowerBound_isTheMeanLessStudentsTStandardErrors() {
    // mean 2, sample deviation 1, 3 runs: 2 - 2.920 / sqrt(3)
    assertThat(PairedSummary.mean(List.of(1.0, 2.0, 3.0))).isEqualTo(2.0);
    assertThat(PairedSummary.deviation(List.of(1.0, 2.0, 3.0))).isEqualTo(1.0);
    assertThat(PairedSummary.lowerBound95(List.of(1.0, 2.0, 3.0)))
        .isCloseTo(2 - 2.920 / Math.sqrt(3), within(1e-12));
    assertThatThrownBy(() -> PairedSummary.lowerBound95(List.of(2.0)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 1");
  }

  @Test
  void t95_matchesPublishedQuantiles_onBothSidesOfTheTable() {
    assertThat(PairedSummary.t95(1)).isEqualTo(6.314);
    assertThat(PairedSummary.t95(15)).isEqualTo(1.753);
    assertThat(PairedSummary.t95(30)).isEqualTo(1.697);
    // beyond the table: published 1.6955 (31), 1.6839 (40), 1.6577 (120)
    assertThat(PairedSummary.t95(31)).isCloseTo(1.6955, within(0.001));
    assertThat(PairedSummary.t95(40)).isCloseTo(1.6839, within(0.001));
    assertThat(PairedSummary.t95(120)).isCloseTo(1.6577, within(0.001));
    assertThatThrownBy(() -> PairedSummary.t95(0)).isInstanceOf(IllegalArgumentException.class);
  }
}

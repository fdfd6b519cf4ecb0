package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.StringReader;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The spec and CSV parsers, good input and every kind of bad input. */
class ParsersTest {

  @Test
  void spec_segmentsFollowEachOther() {
    List<Arrival> a = TrafficSpec.parse("idle 5s, 200 in 100ms, 300/s for 2s", 1);
    assertThat(a).hasSize(800);
    assertThat(a.get(0).nanos()).isEqualTo(5_000_000_000L);
    assertThat(a.get(1).nanos()).isEqualTo(5_000_500_000L);
    assertThat(a.get(200).nanos()).isEqualTo(5_100_000_000L);
    assertThat(a.get(799).nanos()).isLessThan(7_100_000_000L);
  }

  @Test
  void spec_atCostAndPoisson() {
    List<Arrival> a = TrafficSpec.parse("at 1s, at 1.7s cost 2.5, 1000 in 10s poisson cost 0.5", 7);
    assertThat(a.get(1)).isEqualTo(new Arrival(1_700_000_000L, 2.5));
    assertThat(a.get(2).cost()).isEqualTo(0.5);
    assertThat(a.size() - 2).as("about 1000 poisson arrivals").isBetween(900, 1100);
    assertThat(TrafficSpec.parse("1000 in 10s poisson", 7)).isEqualTo(TrafficSpec.parse("1000 in 10s poisson", 7));
    assertThat(TrafficSpec.parse("5/ms for 2ms", 1)).hasSize(10);
  }

  @Test
  void spec_badInput_saysWhereAndWhatWasExpected() {
    assertThatThrownBy(() -> TrafficSpec.parse("200 in 1x", 1))
        .isInstanceOf(InputException.class).hasMessage("at position 9: expected a unit (ns, us, ms, s, m or h), found 'x'");
    assertThatThrownBy(() -> TrafficSpec.parse("200 within 1s", 1))
        .hasMessageStartingWith("at position 5: expected 'in' and a duration");
    assertThatThrownBy(() -> TrafficSpec.parse("idle 5s; 10 in 1s", 1))
        .hasMessage("at position 8: expected ',' between segments, found '; 10 in 1s'");
    assertThatThrownBy(() -> TrafficSpec.parse("", 1)).hasMessageStartingWith("at position 1: expected a segment");
    assertThatThrownBy(() -> TrafficSpec.parse("10 in 1s cost 0", 1)).hasMessageContaining("cost must be positive");
    assertThatThrownBy(() -> TrafficSpec.parse("2.5 in 1s", 1)).hasMessageContaining("whole number");
    assertThatThrownBy(() -> TrafficSpec.parse("at 2s, at 1s", 1)).hasMessageContaining("before the end of the previous segment");
    assertThatThrownBy(() -> TrafficSpec.parse("300/s 2s", 1)).hasMessageContaining("'for'");
  }

  private static List<Arrival> csv(String text) throws Exception {
    return CsvArrivals.read(new BufferedReader(new StringReader(text)));
  }

  @Test
  void csv_timesAndCosts_headerAndComments() throws Exception {
    List<Arrival> a = csv("time,cost\n# a comment\n0.5\n1.25,3\n\n2,0.5\n");
    assertThat(a).containsExactly(new Arrival(500_000_000L, 1), new Arrival(1_250_000_000L, 3),
        new Arrival(2_000_000_000L, 0.5));
  }

  @Test
  void csv_badLines_sayLineAndColumn() {
    assertThatThrownBy(() -> csv("1\nabc,2\n"))
        .isInstanceOf(InputException.class).hasMessage("line 2, column 1: expected a time in seconds such as 1.25, found 'abc'");
    assertThatThrownBy(() -> csv("1,x\n")).hasMessage("line 1, column 3: expected a positive cost such as 2.5, found 'x'");
    assertThatThrownBy(() -> csv("1,-2\n")).hasMessage("line 1, column 3: expected a positive finite cost, found -2");
    assertThatThrownBy(() -> csv("2\n1\n")).hasMessageStartingWith("line 2, column 1: times must not go backwards");
    assertThatThrownBy(() -> csv("1,2,3\n")).hasMessageContaining("at most two fields");
    assertThatThrownBy(() -> csv("-1\n")).hasMessageContaining("between 0 and 1e9 seconds");
  }
}

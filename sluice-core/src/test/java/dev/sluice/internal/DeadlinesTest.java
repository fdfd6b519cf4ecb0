package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadlinesTest {
  @Test
  void grpcTimeout_readsEveryUnit() {
    assertThat(Deadlines.parse("grpc-timeout", "2H")).isEqualTo(Duration.ofHours(2));
    assertThat(Deadlines.parse("grpc-timeout", "3M")).isEqualTo(Duration.ofMinutes(3));
    assertThat(Deadlines.parse("grpc-timeout", "5S")).isEqualTo(Duration.ofSeconds(5));
    assertThat(Deadlines.parse("grpc-timeout", "250m")).isEqualTo(Duration.ofMillis(250));
    assertThat(Deadlines.parse("grpc-timeout", "1500u")).isEqualTo(Duration.ofNanos(1_500_000));
    assertThat(Deadlines.parse("grpc-timeout", "99999999n")).isEqualTo(Duration.ofNanos(99_999_999));
    assertThat(Deadlines.parse("grpc-timeout", " 0m ")).isZero();
  }

  @Test
  void aBareNumber_isMilliseconds() {
    assertThat(Deadlines.parse("x-envoy-expected-rq-timeout-ms", "15000"))
        .isEqualTo(Duration.ofSeconds(15));
  }

  @Test
  void anythingElse_isRefused_namingTheHeaderAndTheValue() {
    for (String bad : new String[] {"", "m", "-5m", "5 m", "5ms", "5s5", "1.5S", "123456789m",
        "5x", "1234567890123456789"}) {
      assertThatThrownBy(() -> Deadlines.parse("Grpc-Timeout", bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("header grpc-timeout").hasMessageContaining("'" + bad + "'");
    }
    assertThatThrownBy(() -> Deadlines.parse("grpc-timeout", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("null");
  }

  @Test
  void theFirstDeadlinePresent_inOrder() {
    Map<String, String> headers = Map.of("grpc-timeout", "50m", "x-deadline-ms", "10");
    assertThat(Deadlines.find(List.of("grpc-timeout", "x-deadline-ms"), headers::get))
        .isEqualTo(Duration.ofMillis(50));
    assertThat(Deadlines.find(List.of("x-deadline-ms", "grpc-timeout"), headers::get))
        .isEqualTo(Duration.ofMillis(10));
    assertThat(Deadlines.find(List.of("x-none"), headers::get)).isNull();
  }
}

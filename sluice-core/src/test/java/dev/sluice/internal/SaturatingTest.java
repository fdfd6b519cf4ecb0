package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one saturating arithmetic of the rate side, the concurrency side and the breaker. */
class SaturatingTest {
  @Test
  void sumsThatWouldOverflow_stopAtTheEnds() {
    assertThat(Saturating.add(1, 2)).isEqualTo(3);
    assertThat(Saturating.add(Long.MAX_VALUE - 1, 5)).isEqualTo(Long.MAX_VALUE);
    assertThat(Saturating.add(Long.MIN_VALUE + 1, -5)).isEqualTo(Long.MIN_VALUE);
    assertThat(Saturating.add(Long.MAX_VALUE, Long.MIN_VALUE)).isEqualTo(-1);
    assertThat(Saturating.add(-7, 3)).isEqualTo(-4);
  }

  @Test
  void durationsBeyondLongNanos_stopAtTheEnds() {
    assertThat(Saturating.nanos(Duration.ofMillis(5))).isEqualTo(5_000_000L);
    assertThat(Saturating.nanos(Duration.ofDays(365L * 1000))).isEqualTo(Long.MAX_VALUE);
    assertThat(Saturating.nanos(Duration.ofDays(-365L * 1000))).isEqualTo(Long.MIN_VALUE);
    assertThat(Saturating.nanos(Duration.ZERO)).isZero();
  }
}

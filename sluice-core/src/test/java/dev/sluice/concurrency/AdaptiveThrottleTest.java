package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Google SRE's client-side throttling, on a virtual clock with a seeded random. */
class AdaptiveThrottleTest {
  private final TestTime time = new TestTime();
  private final Random random = new Random(42);

  private AdaptiveThrottle throttle(double k) {
    return AdaptiveThrottle.builder().k(k).window(Duration.ofSeconds(20)).clock(time)
        .random(random::nextDouble).build();
  }

  /** Sends {@code calls} through the throttle; the backend accepts each with {@code accept}. */
  private int sent(AdaptiveThrottle t, int calls, double accept) {
    int sent = 0;
    for (int i = 0; i < calls; i++) {
      if (t.tryRequest()) {
        sent++;
        if (random.nextDouble() < accept) {
          t.accepted();
        }
      }
    }
    return sent;
  }

  @Test
  void aHealthyBackend_isSentEverything() {
    AdaptiveThrottle t = throttle(2);
    assertThat(sent(t, 10_000, 1.0)).isEqualTo(10_000);
    assertThat(t.rejectProbability()).isZero();
  }

  /**
   * Sends 1,000 calls a second for {@code seconds} to a backend that accepts 100 a second and
   * refuses the rest; answers how many were sent in the last ten seconds.
   */
  private int overloaded(AdaptiveThrottle t, int seconds) {
    int sentLastTen = 0;
    for (int second = 0; second < seconds; second++) {
      int accepted = 0;
      for (int i = 0; i < 1_000; i++) {
        time.advance(1_000_000L);
        if (t.tryRequest()) {
          if (second >= seconds - 10) {
            sentLastTen++;
          }
          if (accepted < 100) {
            accepted++;
            t.accepted();
          }
        }
      }
    }
    return sentLastTen;
  }

  /** An overloaded backend is sent about K times what it accepts; the rest stay local. */
  @Test
  void anOverloadedBackend_isSentAboutKTimesWhatItAccepts() {
    assertThat(overloaded(throttle(2), 40)).as("about 2 x 100/s for 10 s")
        .isBetween(1_800, 2_200);
    assertThat(overloaded(throttle(5), 40)).as("K = 5: about 5 x 100/s").isBetween(4_500, 5_500);
  }

  @Test
  void theCountsAgeOut_withTheWindow() {
    AdaptiveThrottle t = throttle(2);
    sent(t, 1_000, 0.0);   // the backend refuses everything
    assertThat(t.rejectProbability()).isGreaterThan(0.99);
    time.advance(21_000_000_000L);   // past the 20 s window
    assertThat(t.rejectProbability()).isZero();
    assertThat(t.tryRequest()).isTrue();
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> AdaptiveThrottle.builder().k(0.5))
        .hasMessage("K must be between 1 and 100 but was 0.5");
    assertThatThrownBy(() -> AdaptiveThrottle.builder().window(Duration.ofMillis(10)))
        .hasMessage("window must be between 1 s and 1 hour but was PT0.01S");
  }
}

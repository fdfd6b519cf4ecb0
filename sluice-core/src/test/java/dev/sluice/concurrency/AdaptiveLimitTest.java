package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The adaptive limits on synthetic samples: each window is 100 samples of one latency, with the
 * permits in flight the limit allows, on a virtual clock.
 */
class AdaptiveLimitTest {
  private static final long MS = 1_000_000L;
  private long now;

  /**
   * Feeds one window: 100 permits of {@code rttMs}, started with {@code inFlight}; the last ends
   * 100 ms after the others, so that it, and only it, closes the window.
   */
  private void window(AdaptiveLimit limit, double rttMs, int inFlight, Outcome outcome) {
    for (int i = 0; i < 100; i++) {
      if (i == 99) {
        now += 100 * MS;
      }
      limit.onEnd(new PermitEnd("k", 1, (long) (rttMs * MS), outcome, inFlight), now);
    }
  }

  /** A window in which the limit was used: in flight at the limit. */
  private void used(AdaptiveLimit limit, double rttMs) {
    window(limit, rttMs, limit.limit(), Outcome.SUCCESS);
  }

  @Test
  void gradient_growsWhileTheLatencyStaysAtItsBaseline_andOnlyWhenTheLimitIsUsed() {
    GradientLimit g = GradientLimit.builder().initial(20).max(1000).build();
    used(g, 20);
    assertThat(g.limit()).as("the baseline is 20 ms; slow start: half again").isEqualTo(30);
    used(g, 20);
    assertThat(g.limit()).isEqualTo(45);
    int before = g.limit();
    window(g, 20, 5, Outcome.SUCCESS);   // 5 in flight of 45: the limit was not used
    assertThat(g.limit()).as("an unused limit does not grow").isEqualTo(before);
    assertThat(g.baselineNanos()).isEqualTo(20 * MS);
  }

  /** Issue 44, item 3: the estimates a user can meter (the no-load latency, the gradient). */
  @Test
  void gradient_exposesItsEstimates() {
    GradientLimit g = GradientLimit.builder().initial(20).build();
    assertThat(g.noLoadLatencyNanos()).isNaN();
    assertThat(g.gradient()).isNaN();
    used(g, 20);
    assertThat(g.noLoadLatencyNanos()).isEqualTo(20 * MS);
    window(g, 36, g.limit(), Outcome.SUCCESS);   // a queue: 1.2 x 20 / 36 = 2/3
    assertThat(g.gradient()).isCloseTo(2.0 / 3, within(0.001));
    window(g, 20, g.limit(), Outcome.SUCCESS);
    assertThat(g.gradient()).as("no queue: kept within 1").isEqualTo(1.0);
    AimdLimit aimd = AimdLimit.builder().build();
    assertThat(aimd.noLoadLatencyNanos()).as("AIMD keeps no such estimate").isNaN();
    assertThat(aimd.gradient()).isNaN();
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().adaptive(() -> g).build();
    assertThat(l.adaptiveLimit("k")).as("no state for a key never asked for").isNull();
    l.tryAcquire("k").permit().close();
    assertThat(l.adaptiveLimit("k")).isSameAs(g);
    assertThat(ConcurrencyLimiter.builder().limit(3).build().adaptiveLimit("k")).isNull();
  }

  @Test
  void gradient_comesDownWhenAQueueBuilds_andSettlesNearTheKnee() {
    GradientLimit g = GradientLimit.builder().initial(100).build();
    used(g, 20);
    // 50 workers: with n in flight the latency is 20 ms x max(1, n / 50)
    for (int i = 0; i < 200; i++) {
      int n = g.limit();
      window(g, 20 * Math.max(1, n / 50.0), n, Outcome.SUCCESS);
    }
    // at the fixed point the latency is tolerance / (1 - headroom) = 1.2 / 0.9 of the baseline
    assertThat(g.limit()).isBetween(55, 75);
  }

  /**
   * A window at the limit in flight on a backend without a queue, timed by Little's law: it
   * serves {@code limit / rtt} calls a second, so the window's samples take that long to come.
   */
  private void served(GradientLimit g, double rttMs) {
    int inFlight = g.limit();
    int n = (int) Math.max(100, Math.round(inFlight * 100 / rttMs));
    long span = (long) (n * rttMs / inFlight * MS);
    for (int i = 0; i < n; i++) {
      if (i == n - 1) {
        now += span;
      }
      g.onEnd(new PermitEnd("k", 1, (long) (rttMs * MS), Outcome.SUCCESS, inFlight), now);
    }
  }

  @Test
  void gradient_aSlowerBackendRaisesTheBaseline_whenCuttingDoesNotBringTheLatencyDown() {
    GradientLimit g = GradientLimit.builder().initial(100).build();
    served(g, 20);
    served(g, 20);
    // every call now takes 40 ms whatever is in flight: no queue, a slower backend, which
    // serves fewer calls a second as the limit comes down
    for (int i = 0; i < 30; i++) {
      served(g, 40);
    }
    assertThat(g.baselineNanos()).as("moved up to the backend's own latency")
        .isGreaterThanOrEqualTo(40 * MS / 1.2 - 1);
    assertThat(g.limit()).as("and the limit did not collapse").isGreaterThan(50);
  }

  @Test
  void gradient_drops_backOff() {
    GradientLimit g = GradientLimit.builder().initial(100).backoff(0.5).build();
    window(g, 20, 100, Outcome.DROPPED);
    assertThat(g.limit()).isEqualTo(50);
    window(g, 20, 100, Outcome.IGNORED);
    assertThat(g.limit()).as("ignored permits say nothing").isEqualTo(50);
  }

  @Test
  void aimd_addsOneAWindowWhenUsed_andBacksOffOnceAWindowOnDrops() {
    AimdLimit a = AimdLimit.builder().initial(10).max(12).backoff(0.5).build();
    used(a, 20);
    assertThat(a.limit()).isEqualTo(11);
    used(a, 20);
    used(a, 20);
    assertThat(a.limit()).as("the ceiling").isEqualTo(12);
    window(a, 20, 1, Outcome.SUCCESS);
    assertThat(a.limit()).isEqualTo(12);
    window(a, 20, 12, Outcome.DROPPED);   // 100 drops: one backoff
    assertThat(a.limit()).isEqualTo(6);
    AimdLimit slow = AimdLimit.builder().initial(10).latencyThreshold(Duration.ofMillis(30))
        .build();
    used(slow, 40);
    assertThat(slow.limit()).as("slower than the threshold counts as a drop").isEqualTo(9);
    window(slow, 20, 1, Outcome.SUCCESS);
    assertThat(slow.limit()).as("unused: no growth").isEqualTo(9);
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> GradientLimit.builder().tolerance(0.5))
        .hasMessage("tolerance must be between 1 and 10 but was 0.5");
    assertThatThrownBy(() -> GradientLimit.builder().min(0))
        .hasMessage("min must be at least 1 but was 0");
    assertThatThrownBy(() -> GradientLimit.builder().min(10).max(5).build())
        .hasMessage("min (10) must not be above max (5)");
    assertThatThrownBy(() -> AimdLimit.builder().backoff(1))
        .hasMessage("backoff must be above 0 and below 1 but was 1.0");
    assertThatThrownBy(() -> AimdLimit.builder().window(Duration.ZERO, 10))
        .hasMessage("window must be above 0 and at most 1 hour but was PT0S");
  }
}

package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every documented rule: bad input fails at once with the parameter and the value. */
class ValidationTest {

  /**
   * Issue 11, defect 10 (first part): a unit of cost that is far from a whole number of ticks was
   * charged floor(ticks) on a microsecond store: 300,000/s admitted 333,333/s, 2,000,000/s
   * admitted 1,000,000/s. Such limits are refused now, naming the error; near-whole units pass.
   */
  @Test
  void bucketWhoseUnitIsFarFromWholeTicks_isRefused_notSilentlyWrong() {
    assertThatThrownBy(() -> Limit.leakyBucket(100, Rate.perSecond(300_000)).named("fast")
            .checkRepresentable(1_000_000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fast: one unit of cost leaks in 3.333 ticks")
        .hasMessageContaining("charge as 3, exceeding the limit by 11.1%");
    assertThatThrownBy(() -> Limit.tokenBucket(100, Rate.perSecond(2_000_000)).checkRepresentable(1_000_000))
        .hasMessageContaining("charge as 1, falling short of the limit by 50.0%");
    assertThatThrownBy(() -> Limit.gcra(Rate.perSecond(400_000), 10).checkRepresentable(1_000_000))
        .hasMessageContaining("exceeding the limit by 25.0%");
    // whole ticks, or units long enough that one tick is under 0.1% of them, are accepted
    Limit.leakyBucket(100, Rate.perSecond(250_000)).checkRepresentable(1_000_000);
    Limit.leakyBucket(100, Rate.perSecond(3)).checkRepresentable(1_000_000);
    Limit.leakyBucket(100, Rate.perSecond(300_000)).checkRepresentable(1_000_000_000);
    assertThat(Sluice.builder().limit(Limit.leakyBucket(100, Rate.perSecond(300_000))).build()
        .tryAcquire("k").isAllowed()).as("in memory (ns) 300,000/s is 3,333.3 ns: within 0.1%").isTrue();
  }

  @Test
  void capacity_notPositiveOrNotFinite_isRejectedWithTheValue() {
    for (double bad : new double[] {0, -3, Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThatThrownBy(() -> Limit.leakyBucket(bad, Rate.perSecond(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("capacity must be positive and finite but was");
      assertThatThrownBy(() -> Limit.tokenBucket(bad, Rate.perSecond(1)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("capacity");
      assertThatThrownBy(() -> Limit.gcra(Rate.perSecond(1), bad))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("burst");
      assertThatThrownBy(() -> Limit.fixedWindow(bad, Duration.ofSeconds(1)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("limit");
    }
    assertThatThrownBy(() -> Limit.leakyBucket(-3, Rate.perSecond(1))).hasMessageEndingWith("-3");
  }

  @Test
  void rate_notPositive_isRejectedWithTheValue() {
    assertThatThrownBy(() -> Rate.perSecond(0)).hasMessage("rate amount must be positive and finite but was 0");
    assertThatThrownBy(() -> Rate.perSecond(Double.NaN)).hasMessageContaining("NaN");
    assertThatThrownBy(() -> Rate.of(1, Duration.ZERO)).hasMessage("rate period must be positive but was PT0S");
    assertThatThrownBy(() -> Rate.of(1, Duration.ofSeconds(-1))).hasMessageContaining("PT-1S");
    assertThatThrownBy(() -> Rate.of(1, null)).isInstanceOf(NullPointerException.class).hasMessage("period");
    assertThatThrownBy(() -> Limit.leakyBucket(1, null)).isInstanceOf(NullPointerException.class).hasMessage("rate");
  }

  @Test
  void windows_tooShortOrLimitTooLarge_areRejected() {
    assertThatThrownBy(() -> Limit.fixedWindow(1, Duration.ofNanos(999)))
        .hasMessage("window must be at least 1µs but was PT0.000000999S");
    assertThatThrownBy(() -> Limit.slidingWindow(1e10, Duration.ofSeconds(1)))
        .hasMessage("limit of a window must be at most 9007199254 but was 10000000000");
    assertThatThrownBy(() -> Limit.slidingWindow(1, null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void penaltyAndName_areValidated() {
    Limit l = Limit.leakyBucket(1, Rate.perSecond(1));
    assertThatThrownBy(() -> l.withPenalty(Duration.ofSeconds(-1))).hasMessage("penalty must not be negative but was PT-1S");
    assertThatThrownBy(() -> l.withPenalty(Duration.ofNanos(10))).hasMessageContaining("at least 1µs");
    assertThatThrownBy(() -> l.named(" ")).hasMessage("name must not be blank");
    assertThat(l.withPenalty(Duration.ZERO).penalty()).isZero();
  }

  @Test
  void drainTimeBeyondRepresentable_isRejectedAtBuild_neverSaturatedSilently() {
    Limit glacial = Limit.leakyBucket(1, Rate.of(1, Duration.ofDays(365L * 1_000_000)));
    assertThatThrownBy(() -> Sluice.builder().limit(glacial).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("years to drain").hasMessageContaining("leaky-bucket(1 @ 1/");
    Limit instant = Limit.leakyBucket(1e-10, Rate.perSecond(1));
    assertThatThrownBy(() -> Sluice.builder().limit(instant).build())
        .hasMessageContaining("less than one tick");
    // 1,000 per 30 days keeps its exact rate
    assertThat(Rate.of(1000, Duration.ofDays(30)).perSecond()).isEqualTo(1000 / (30 * 86400d));
    assertThat(Rate.of(1, Duration.ofDays(365L * 1_000_000)).perSecond()).isPositive();
  }

  @Test
  void builder_failsFastWithASentence() {
    assertThatThrownBy(() -> Sluice.builder().build())
        .isInstanceOf(IllegalStateException.class).hasMessage("no limit was set: call limit(...) at least once");
    assertThatThrownBy(() -> Sluice.builder().maximumKeys(0)).hasMessage("maximumKeys must be positive but was 0");
    assertThatThrownBy(() -> Sluice.builder().maximumKeys(5).maximumKeys(6))
        .isInstanceOf(IllegalStateException.class).hasMessage("maximumKeys was already set to 5");
    assertThatThrownBy(() -> Sluice.builder().clock(Clock.system()).clock(Clock.system()))
        .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("clock was already set");
    assertThatThrownBy(() -> Sluice.builder().limit(null)).isInstanceOf(NullPointerException.class).hasMessage("limit");
    assertThatThrownBy(() -> Algorithm.fromId("bucket")).hasMessageContaining("unknown algorithm 'bucket'");
  }

  @Test
  void hugeCostsAndTimeouts_saturate_neverWrap() throws InterruptedException {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1))).build();
    Decision d = l.tryAcquire("k", 1e300);
    assertThat(d.isNeverAdmissible()).isTrue();
    assertThat(d.remaining()).isEqualTo(10);
    assertThat(l.acquire("k", 1, Duration.ofSeconds(Long.MAX_VALUE)).isAllowed()).isTrue();
    assertThat(l.tryAcquire("k", Double.MIN_VALUE).isAllowed()).as("the smallest charge is one tick").isTrue();
  }

  @Test
  void names_andToString_sayWhatTheLimitIs() {
    assertThat(Limit.leakyBucket(3, Rate.perSecond(1.5)).name()).isEqualTo("leaky-bucket(3 @ 1.5/1s)");
    assertThat(Limit.gcra(Rate.of(1000, Duration.ofDays(30)), 10).name()).isEqualTo("gcra(10 @ 1000/30d)");
    assertThat(Limit.slidingWindow(100, Duration.ofMinutes(1)).toString()).isEqualTo("sliding-window(100 / 1m)");
    assertThat(Limit.fixedWindow(5, Duration.ofMillis(1500)).withPenalty(Duration.ofSeconds(30)).toString())
        .isEqualTo("fixed-window(5 / 1500ms) penalty 30s");
    assertThat(Limit.leakyBucket(3, Rate.perSecond(1.5)).window()).isEqualTo(Duration.ofSeconds(2));
  }
}

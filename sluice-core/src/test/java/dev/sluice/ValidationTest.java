package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every documented rule: bad input fails at once with the parameter and the value. */
class ValidationTest {

  /**
   * Issue 11, defect 10: a unit of cost that is not a whole number of ticks was charged
   * floor(ticks) on a microsecond store (300,000/s admitted 333,333/s). Buckets now count in
   * steps that make a unit whole, so such rates are exact; only when the exact steps cannot fit
   * the store's arithmetic next to a huge capacity, and rounding the unit would then overcharge
   * by more than 0.1%, is the limit refused, naming the error.
   */
  @Test
  void bucketWhoseUnitCannotBeCountedWithinAThousandth_isRefused_notSilentlyWrong() {
    Limit.leakyBucket(100, Rate.perSecond(300_000)).checkRepresentable(1_000_000);
    Limit.tokenBucket(100, Rate.perSecond(2_000_000)).checkRepresentable(1_000_000);
    Limit.gcra(Rate.perSecond(400_000), 10).checkRepresentable(1_000_000);
    assertThatThrownBy(() -> Limit.leakyBucket(2.7e13, Rate.perSecond(1_234_567.1)).named("huge")
            .checkRepresentable(1_000_000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("huge: one unit of cost leaks in 0.810001 ticks")
        .hasMessageContaining("only charge as 83/102, exceeding the limit by 0.5%");
    // the same capacity with a rate whose unit is whole ticks is exact
    Limit.leakyBucket(2.7e13, Rate.perSecond(1_000_000)).checkRepresentable(1_000_000);
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

  /** Issue 12: settings that only make sense together fail at build() with a sentence. */
  @Test
  void builder_settingsThatDoNotGoTogether_failAtBuildWithASentence() {
    Limit l = Limit.leakyBucket(10, Rate.perSecond(1));
    assertThatThrownBy(() -> Sluice.builder().limit(l).onStoreFailure(StoreFailure.FAIL_OPEN).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("onStoreFailure applies to a limiter on a shared store, and no store(...) was given");
    assertThatThrownBy(() -> Sluice.builder().limit(l).circuitBreaker(CircuitBreakerSettings.defaults()).build())
        .hasMessageStartingWith("circuitBreaker applies to a limiter on a shared store");
    assertThatThrownBy(() -> Sluice.builder().limit(l).localDenyCache(10).build())
        .hasMessageStartingWith("localDenyCache applies to a limiter on a shared store");
    assertThatThrownBy(() -> Sluice.builder().localDenyCache(10).localDenyCache(20))
        .isInstanceOf(IllegalStateException.class).hasMessage("localDenyCache was already set to 10");
    StoreFailureTest.FlakyStore store = new StoreFailureTest.FlakyStore();
    assertThatThrownBy(() -> Sluice.builder().limit(l).store(store).maximumKeys(100).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("maximumKeys bounds the keys held in memory, and a limiter on a store holds none");
    // together they build
    Sluice.builder().limit(l).store(store).maximumKeys(100)
        .onStoreFailure(StoreFailure.FALLBACK_IN_MEMORY).build();
    Sluice.builder().limit(l).store(store).localDenyCache(10)
        .circuitBreaker(CircuitBreakerSettings.defaults()).build();
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

package dev.sluice;

import dev.sluice.spi.StoreReference;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.spi.StoreProtocol.Operation;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The store operations fleet mode builds on (issue 13): a lease takes as many grains as every
 * bucket holds room for, charged as admissions; a release gives grains back.
 */
class LeaseTest {
  private static final long NOW = 1_000_000_000L;

  @Test
  void lease_grantsWhatFits_andChargesIt() {
    StoreReference ref = StoreReference.of(List.of(Limit.leakyBucket(10, Rate.perSecond(1))), 1_000_000);
    long[] s = ref.initialState();
    assertThat(ref.granted(s, NOW, 1, 4)).isEqualTo(4);
    s = ref.next(s, NOW, Operation.LEASE, 1, 4);
    assertThat(ref.decision(s, NOW, Operation.CHECK, 1).level()).isEqualTo(4.0);
    assertThat(ref.granted(s, NOW, 1, 100)).as("the rest, no more").isEqualTo(6);
    s = ref.next(s, NOW, Operation.LEASE, 1, 100);
    assertThat(ref.granted(s, NOW, 1, 1)).isZero();
    assertThat(ref.granted(s, NOW + 1_500_000, 1, 5)).as("1.5 s leaked: one whole grain").isEqualTo(1);
    assertThat(ref.granted(s, NOW + 1_500_000, 0.5, 5)).as("three half grains").isEqualTo(3);
  }

  @Test
  void release_givesGrainsBack_neverBelowEmpty() {
    StoreReference ref = StoreReference.of(List.of(Limit.leakyBucket(10, Rate.perSecond(1.5))), 1_000_000_000);
    long[] s = ref.next(ref.initialState(), NOW, Operation.LEASE, 1, 9);
    s = ref.next(s, NOW, Operation.RELEASE, 1, 3);
    assertThat(ref.decision(s, NOW, Operation.CHECK, 1).level()).isEqualTo(6.0);
    s = ref.next(s, NOW, Operation.RELEASE, 1, Long.MAX_VALUE);
    assertThat(ref.decision(s, NOW, Operation.CHECK, 1).level()).isZero();
  }

  @Test
  void severalLimits_grantWhatAllOfThemAllow() {
    StoreReference ref = StoreReference.of(List.of(Limit.leakyBucket(10, Rate.perSecond(1)),
        Limit.leakyBucket(3, Rate.perSecond(1000))), 1_000_000);
    assertThat(ref.granted(ref.initialState(), NOW, 1, 100)).isEqualTo(3);
  }

  @Test
  void penaltyHold_isNeitherLeasedFromNorShortenedByARelease() {
    StoreReference ref = StoreReference.of(
        List.of(Limit.leakyBucket(2, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(30))), 1_000_000);
    long[] s = ref.next(ref.initialState(), NOW, Operation.FILL_UP, 1, 1);
    s = ref.next(s, NOW, Operation.FILL_UP, 1, 1);   // reaches capacity: held for 30 s
    assertThat(ref.granted(s, NOW, 1, 1)).isZero();
    assertThat(ref.next(s, NOW, Operation.RELEASE, 1, 5)).containsExactly(s);
    assertThat(ref.next(s, NOW, Operation.LEASE, 1, 5)).as("a lease never starts a penalty").containsExactly(s);
  }

  @Test
  void windows_haveNoRateToLeaseFrom() {
    StoreReference ref = StoreReference.of(List.of(Limit.fixedWindow(5, Duration.ofSeconds(1))), 1_000_000);
    assertThatThrownBy(() -> ref.next(ref.initialState(), NOW, Operation.LEASE, 1, 2))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("leases take from a leak rate");
  }
}

package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.concurrency.Bulkhead;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import dev.sluice.health.HealthSignal;
import org.junit.jupiter.api.Test;

/** {@link Sluice} starts each kind of limit, and each one built there behaves as its own. */
class FrontDoorTest {
  @Test
  void aRateLimiter() {
    RateLimiter l = Sluice.builder().limit(Limit.fixedWindow(1, java.time.Duration.ofHours(1)))
        .build();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
  }

  @Test
  void aConcurrencyLimiter() {
    var l = Sluice.concurrency().limit(2).build();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    l.close();
  }

  @Test
  void aBulkhead() {
    Bulkhead b = Sluice.bulkhead(1).build();
    long h = b.tryAcquire();
    assertThat(h).isNotEqualTo(Bulkhead.NO_PERMIT);
    assertThat(b.tryAcquire()).isEqualTo(Bulkhead.NO_PERMIT);
    assertThat(b.release(h)).isTrue();
  }

  @Test
  void aHealthShedder() {
    var s = Sluice.health().signal(HealthSignal.of("cpu", () -> 1.0), 0.5, 0.9).guard(false)
        .build();
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("cpu at 100%, past its band").isFalse();
  }
}

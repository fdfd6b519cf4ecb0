package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Refusal;
import dev.sluice.spi.PermitStore;
import dev.sluice.spi.PrefixedPermitStore;
import org.junit.jupiter.api.Test;

/** Two limits' views of one store share no permits, and failure domains pass through. */
class PrefixedPermitStoreTest {
  private final ManualClock clock = new ManualClock(1_000_000_000_000L);
  private final ReferencePermitStore store = new ReferencePermitStore(clock);

  @Test
  void twoViews_shareNoPermits() {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1)
        .store(new PrefixedPermitStore(store, "db")).clock(clock).scheduler(clock).build();
    ConcurrencyLimiter search = ConcurrencyLimiter.builder().limit(1)
        .store(new PrefixedPermitStore(store, "search")).clock(clock).scheduler(clock).build();
    assertThat(db.tryAcquire("k").isAcquired()).isTrue();
    assertThat(db.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    assertThat(search.tryAcquire("k").isAcquired()).isTrue();
    assertThat(store.inFlight("db/k")).isEqualTo(1);
    assertThat(store.inFlight("search/k")).isEqualTo(1);
    assertThat(store.inFlight("k")).isZero();
  }

  @Test
  void failureDomains_areAskedWithThePrefixedKey() {
    PermitStore byLastChar = new ForwardingPermitStore(store) {
      @Override
      public Object permitFailureDomain(String key) {
        return "node-of-" + key;
      }
    };
    PrefixedPermitStore view = new PrefixedPermitStore(byLastChar, "db");
    assertThat(view.permitFailureDomain("k")).isEqualTo("node-of-db/k");
    view.resetPermits("k");
    assertThatThrownBy(() -> new PrefixedPermitStore(store, ""))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("''");
  }
}

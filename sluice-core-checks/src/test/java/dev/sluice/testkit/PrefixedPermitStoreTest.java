package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.concurrency.ConcurrencyGroup;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Refusal;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.PrefixedPermitStore;
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

  /** Groups are apart per view too: two limits' groups of one name share nothing. */
  @Test
  void twoViews_shareNoGroups() {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().group(ConcurrencyGroup.sharing(1))
        .store(new PrefixedPermitStore(store, "db")).clock(clock).scheduler(clock).build();
    ConcurrencyLimiter search = ConcurrencyLimiter.builder().group(ConcurrencyGroup.sharing(1))
        .store(new PrefixedPermitStore(store, "search")).clock(clock).scheduler(clock).build();
    assertThat(db.tryAcquire("a").isAcquired()).isTrue();
    assertThat(db.tryAcquire("b").refusal()).isEqualTo(Refusal.FULL);   // the group of db is full
    assertThat(search.tryAcquire("b").isAcquired()).isTrue();
    assertThat(store.inFlight("db/" + ConcurrencyGroup.DEFAULT_GROUP, null)).isEqualTo(1);
    assertThat(store.inFlight("db/" + ConcurrencyGroup.DEFAULT_GROUP, "db/a")).isEqualTo(1);
    assertThat(store.inFlight("search/" + ConcurrencyGroup.DEFAULT_GROUP, null)).isEqualTo(1);
  }

  /** A group on a store that keeps none is refused when the limiter is built, naming the store. */
  @Test
  void aGroupOnAStoreWithoutGroups_isRefusedAtBuild() {
    PermitStore plain = new ForwardingPermitStore(store) {
      @Override
      public boolean supportsPermitGroups() {
        return false;
      }

      @Override
      public String toString() {
        return "PlainStore";
      }
    };
    assertThatThrownBy(() -> ConcurrencyLimiter.builder().group(ConcurrencyGroup.sharing(2))
        .store(plain).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("the store PlainStore keeps no permit groups");
  }
}

package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.internal.PrefixedStore;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The decorator Sluice ships, {@link PrefixedStore} (several policies on one store), forwards
 * failure domains with the key it passes on, so a limiter over it keeps one circuit breaker per
 * node: a dead node degrades only its own keys.
 */
class PrefixedStoreTest {
  /** Keys live on the node named by their last character; node "a" can be down. */
  static class TwoNodes implements DecisionStore {
    volatile boolean aDown;
    final AtomicInteger calls = new AtomicInteger();

    @Override
    public Object failureDomain(String key) {
      return "node-" + key.charAt(key.length() - 1);
    }

    @Override
    public Object groupFailureDomain(String group) {
      return "group-node-" + group.charAt(group.length() - 1);
    }

    @Override
    public long ticksPerSecond() {
      return 1_000_000;
    }

    @Override
    public Observation apply(String key, StoreRequest request) {
      calls.incrementAndGet();
      if (aDown && failureDomain(key).equals("node-a")) {
        throw new StoreUnavailableException("node a is down", null);
      }
      return new Observation(5_000_000, request.initialState());
    }

    @Override
    public void reset(String key) {}
  }

  @Test
  void failureDomains_areForwardedWithThePrefixedKey() {
    TwoNodes store = new TwoNodes();
    PrefixedStore prefixed = new PrefixedStore(store, "api");
    assertThat(prefixed.failureDomain("user-a")).isEqualTo("node-a");
    assertThat(prefixed.failureDomain("user-b")).isEqualTo("node-b");
    assertThat(prefixed.groupFailureDomain("tenant-b")).isEqualTo("group-node-b");
  }

  @Test
  void combining_isForwarded_andEveryDefaultMethodIsOverridden() throws Exception {
    TwoNodes store = new TwoNodes();
    assertThat(new PrefixedStore(store, "api").combinesDecisions()).isFalse();
    DecisionStore combining = new TwoNodes() {
      @Override
      public boolean combinesDecisions() {
        return true;
      }
    };
    assertThat(new PrefixedStore(combining, "api").combinesDecisions()).isTrue();
    for (java.lang.reflect.Method m : DecisionStore.class.getMethods()) {
      if (m.isDefault() && !m.getName().equals("close")) {   // closing is the owner's (its javadoc)
        assertThat(PrefixedStore.class.getMethod(m.getName(), m.getParameterTypes())
            .getDeclaringClass()).as("PrefixedStore forwards %s", m.getName())
            .isEqualTo(PrefixedStore.class);
      }
    }
  }

  @Test
  void aDeadNode_opensTheBreakerOfItsOwnKeysOnly() {
    TwoNodes store = new TwoNodes();
    RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1)))
        .store(new PrefixedStore(store, "api")).clock(new EngineInternalsTest.TestClock()).build();
    store.aDown = true;
    for (int i = 0; i < 20; i++) {
      assertThat(limiter.tryAcquire("user-a").isDegraded()).isTrue();
    }
    int before = store.calls.get();
    assertThat(limiter.tryAcquire("user-a").isDegraded()).isTrue();
    assertThat(store.calls.get()).as("node a's breaker is open: no call").isEqualTo(before);
    Decision b = limiter.tryAcquire("user-b");
    assertThat(b.isDegraded()).as("node b's keys are still decided by the store").isFalse();
    assertThat(store.calls.get()).isEqualTo(before + 1);
  }
}

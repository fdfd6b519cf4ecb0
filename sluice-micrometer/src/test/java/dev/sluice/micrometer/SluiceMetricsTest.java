package dev.sluice.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import dev.sluice.testkit.ManualClock;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The meters read what the limiter did, decision by decision and from its stats. */
class SluiceMetricsTest {
  private final ManualClock clock = new ManualClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double decisions(String operation, String outcome, String degraded, String limit) {
    var c = registry.find("sluice.decisions").tags("limiter", "api", "operation", operation,
        "outcome", outcome, "degraded", degraded, "limit", limit).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void everyDecision_isCountedByOperationOutcomeAndLimit_andTimed() throws Exception {
    RateLimiter l = SluiceMetrics.monitor(Sluice.builder()
        .limit(Limit.leakyBucket(2, Rate.perSecond(1)).named("burst"))
        .limit(Limit.slidingWindow(100, Duration.ofHours(1)).named("hourly"))
        .clock(clock).scheduler(clock).build(), "api", registry);
    l.tryAcquire("k");
    l.tryAcquire("k");
    l.tryAcquire("k");
    l.check("k");
    l.tryAcquireAsync("k", 1).get();
    l.fillUp("k", 5);
    assertThat(decisions("tryAcquire", "allowed", "false", "burst")).isEqualTo(2);
    assertThat(decisions("tryAcquire", "rejected", "false", "burst")).isEqualTo(2);
    assertThat(decisions("check", "rejected", "false", "burst")).isEqualTo(1);
    assertThat(decisions("fillUp", "rejected", "false", "burst")).as("reached capacity")
        .isEqualTo(1);
    assertThat(registry.get("sluice.decision.duration").tags("limiter", "api", "operation",
        "tryAcquire").timer().count()).isEqualTo(4);
    assertThat(registry.get("sluice.keys").tag("limiter", "api").gauge().value()).isEqualTo(1);
    assertThat(l.limits()).hasSize(2);
  }

  @Test
  void storeFailures_degradedDecisions_andTheBreaker_areRead() {
    DecisionStore down = new DecisionStore() {
      @Override
      public long ticksPerSecond() {
        return 1_000_000;
      }

      @Override
      public Observation apply(String key, StoreRequest request) {
        throw new StoreUnavailableException("down", null);
      }

      @Override
      public void reset(String key) {}
    };
    RateLimiter l = SluiceMetrics.monitor(Sluice.builder()
        .limit(Limit.leakyBucket(2, Rate.perSecond(1)).named("burst")).store(down)
        .onStoreFailure(StoreFailure.FAIL_OPEN).clock(clock).scheduler(clock).build(), "api",
        registry);
    for (int i = 0; i < 5; i++) {
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    }
    assertThat(decisions("tryAcquire", "allowed", "true", "burst")).isEqualTo(5);
    assertThat(registry.get("sluice.store.errors").tag("limiter", "api").functionCounter().count())
        .as("3 unreachable calls open the breaker; the rest never reach the store").isEqualTo(3);
    assertThat(registry.get("sluice.decisions.degraded").tag("limiter", "api").functionCounter()
        .count()).isEqualTo(5);
    assertThat(registry.get("sluice.circuit.open").tag("limiter", "api").gauge().value())
        .isEqualTo(1);
    assertThat(registry.find("sluice.lease.calls").meters()).as("no fleet mode: no lease meters")
        .isEmpty();
    assertThat(registry.getMeters()).extracting(m -> m.getId().getName())
        .noneMatch(n -> n.startsWith("sluice.lease."));
  }

  @Test
  void badArguments_nameTheValue() {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1))).build();
    assertThatThrownBy(() -> SluiceMetrics.monitor(l, " ", registry))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("name must not be blank");
    assertThatThrownBy(() -> SluiceMetrics.monitor(null, "x", registry))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("limiter");
  }
}

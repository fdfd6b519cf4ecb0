package dev.sluice.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.StoreFailure;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Priority;
import dev.sluice.testkit.ManualClock;
import dev.sluice.testkit.ReferencePermitStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A concurrency limiter's meters read what it did: in flight, limits, waiters, refusals. */
class ConcurrencyMetricsTest {
  private final ManualClock clock = new ManualClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double counter(String name, String... tags) {
    var c = registry.find(name).tags("limiter", "db").tags(tags).functionCounter();
    return c == null ? Double.NaN : c.count();
  }

  private double gauge(String name, String... tags) {
    var g = registry.find(name).tags("limiter", "db").tags(tags).gauge();
    return g == null ? Double.NaN : g.value();
  }

  @Test
  void inFlightLimitWaitingAndRefusalsByReason() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(3).share(Priority.SHEDDABLE, 0.5)
        .clock(clock).scheduler(clock).build();
    SluiceMetrics.binder(l, "db", "orders").bindTo(registry);
    Permit two = l.tryAcquire("orders", 2).permit();
    l.tryAcquire("orders", 2);                       // full
    l.tryAcquire("orders", 1, Priority.SHEDDABLE);   // shed
    l.acquireAsync("orders", 2, Duration.ofSeconds(1));
    assertThat(gauge("sluice.concurrency.in.flight")).isEqualTo(2);
    assertThat(gauge("sluice.concurrency.key.in.flight", "key", "orders")).isEqualTo(2);
    assertThat(gauge("sluice.concurrency.key.limit", "key", "orders")).isEqualTo(3);
    assertThat(gauge("sluice.concurrency.waiting")).isEqualTo(1);
    assertThat(gauge("sluice.concurrency.keys")).isEqualTo(1);
    clock.advance(Duration.ofSeconds(1));            // the waiter times out
    two.release(Outcome.DROPPED);
    assertThat(counter("sluice.concurrency.acquired")).isEqualTo(1);
    assertThat(counter("sluice.concurrency.refused", "reason", "full")).isEqualTo(1);
    assertThat(counter("sluice.concurrency.refused", "reason", "shed")).isEqualTo(1);
    assertThat(counter("sluice.concurrency.refused", "reason", "timed_out")).isEqualTo(1);
    assertThat(counter("sluice.concurrency.ended", "outcome", "dropped")).isEqualTo(1);
    assertThat(gauge("sluice.concurrency.in.flight")).isZero();
    assertThat(gauge("sluice.concurrency.waiting")).isZero();
    assertThat(gauge("sluice.concurrency.circuit.open")).isZero();
  }

  /**
   * By priority: waiting, dispatched, refused, and fair queuing's flows, three series each
   * whatever the number of flows (a hundred tenants wait; the flows gauge reads about 100, and no
   * meter names a tenant).
   */
  @Test
  void byPriority_waitingDispatchedRefusedAndFlows_withBoundedCardinality() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(1)
        .fairQueuing(dev.sluice.concurrency.FairQueuing.of(4096, 4, 10)).maxWaiters(1000)
        .clock(clock).scheduler(clock).build();
    SluiceMetrics.binder(l, "db").bindTo(registry);
    Permit held = l.tryAcquire("orders").permit();
    for (int i = 0; i < 100; i++) {
      l.acquireAsync("orders", "tenant-" + i, 1, Priority.NORMAL, Duration.ofSeconds(5));
    }
    l.acquireAsync("orders", "ops", 1, Priority.CRITICAL, Duration.ofSeconds(5));
    l.tryAcquire("orders", 1, Priority.SHEDDABLE);   // refused: the queue is ahead of it
    assertThat(gauge("sluice.concurrency.priority.waiting", "priority", "normal")).isEqualTo(100);
    assertThat(gauge("sluice.concurrency.priority.waiting", "priority", "critical")).isEqualTo(1);
    assertThat(gauge("sluice.concurrency.priority.flows", "priority", "normal"))
        .isCloseTo(100, org.assertj.core.data.Offset.offset(1.0));
    assertThat(gauge("sluice.concurrency.priority.flows", "priority", "sheddable")).isZero();
    assertThat(counter("sluice.concurrency.priority.refused", "priority", "sheddable"))
        .isEqualTo(1);
    held.close();
    assertThat(counter("sluice.concurrency.priority.dispatched", "priority", "critical"))
        .isEqualTo(1);
    assertThat(registry.find("sluice.concurrency.priority.flows").gauges()).hasSize(3);
    assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getTags().toString())
        .doesNotContain("tenant-"));
  }

  @Test
  void aFailingStore_isCountedAndShown() {
    ReferencePermitStore store = new ReferencePermitStore(clock);
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(3).store(store)
        .onStoreFailure(StoreFailure.FAIL_CLOSED).clock(clock).scheduler(clock).build();
    SluiceMetrics.binder(l, "db", "orders").bindTo(registry);
    store.failing(true);
    for (int i = 0; i < 5; i++) {
      l.tryAcquire("orders");
    }
    // the breaker opens after 3 calls that could not reach the store: the rest never call it
    assertThat(counter("sluice.concurrency.store.errors")).isEqualTo(3);
    assertThat(counter("sluice.concurrency.degraded")).isEqualTo(5);
    assertThat(counter("sluice.concurrency.refused", "reason", "store_unavailable")).isEqualTo(5);
    assertThat(gauge("sluice.concurrency.circuit.open")).isEqualTo(1);
    assertThat(gauge("sluice.concurrency.key.in.flight", "key", "orders")).isEqualTo(-1);
  }

  /** Issue 44, item 3: an adaptive limit's estimates as gauges; NaN for a fixed limit. */
  @Test
  void theEstimatesOfAnAdaptiveLimit_areGauges() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().adaptive(() -> new AdaptiveLimit() {
      @Override
      public int limit() {
        return 5;
      }

      @Override
      public void onEnd(PermitEnd end, long nowNanos) {}

      @Override
      public double noLoadLatencyNanos() {
        return 49e6;
      }

      @Override
      public double gradient() {
        return 0.75;
      }
    }).build();
    SluiceMetrics.binder(l, "db", "orders").bindTo(registry);
    assertThat(registry.find("sluice.concurrency.key.no.load.latency").tags("limiter", "db",
        "key", "orders").gauge()).isNotNull();
    assertThat(gauge("sluice.concurrency.key.no.load.latency", "key", "orders"))
        .as("before the key is seen").isNaN();
    l.tryAcquire("orders").permit().close();
    assertThat(gauge("sluice.concurrency.key.no.load.latency", "key", "orders")).isEqualTo(0.049);
    assertThat(gauge("sluice.concurrency.key.gradient", "key", "orders")).isEqualTo(0.75);
    ConcurrencyLimiter fixed = ConcurrencyLimiter.builder().limit(3).build();
    SluiceMetrics.binder(fixed, "fixed", "orders").bindTo(registry);
    fixed.tryAcquire("orders").permit().close();
    assertThat(registry.find("sluice.concurrency.key.gradient").tags("limiter", "fixed")
        .gauge().value()).isNaN();
  }

  /** An adaptive limit's current value is the key's limit gauge, as it moves. */
  @Test
  void theKeyLimitGauge_followsAnAdaptiveLimit() {
    AtomicInteger dial = new AtomicInteger(5);
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().adaptive(() -> new AdaptiveLimit() {
      @Override
      public int limit() {
        return dial.get();
      }

      @Override
      public void onEnd(PermitEnd end, long nowNanos) {}
    }).build();
    SluiceMetrics.binder(l, "db", "orders").bindTo(registry);
    l.tryAcquire("orders").permit().close();
    assertThat(gauge("sluice.concurrency.key.limit", "key", "orders")).isEqualTo(5);
    dial.set(42);
    assertThat(gauge("sluice.concurrency.key.limit", "key", "orders")).isEqualTo(42);
  }

  @Test
  void aBlankNameOrKey_isRefused() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(3).build();
    assertThatThrownBy(() -> SluiceMetrics.binder(l, " "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
    assertThatThrownBy(() -> SluiceMetrics.binder(l, "db", "orders", ""))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("''");
  }
}

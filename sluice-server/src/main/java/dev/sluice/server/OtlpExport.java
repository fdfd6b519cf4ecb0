package dev.sluice.server;

import dev.sluice.LimiterStats;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Refusal;
import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.registry.otlp.OtlpConfig;
import io.micrometer.registry.otlp.OtlpMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The service's meters pushed over OTLP ({@code --otlp-endpoint}, docs/server.md "Metrics"):
 * Micrometer's OTLP registry, publishing every {@code step}, with the figures {@code /metrics}
 * gives: decisions by policy and outcome, HTTP responses by code, each policy's store errors,
 * degraded decisions and keys, each concurrency limit's in flight, acquisitions, refusals by
 * reason and ends by outcome. Meters of decisions and responses are made as their first one is
 * counted; their number is bounded by the configuration (policies, outcomes, status codes).
 */
final class OtlpExport implements AutoCloseable {
  /** The figures of a policy a reload removed. */
  private static final LimiterStats NONE = new LimiterStats(0, 0, false, 0, 0, 0, 0);

  private final OtlpMeterRegistry registry;

  OtlpExport(String url, Duration step, Metrics metrics, PolicyRegistry policies,
      Map<String, ConcurrencyLimiter> limiters) {
    OtlpConfig config = new OtlpConfig() {
      @Override
      public String get(String key) {
        return null;
      }

      @Override
      public String url() {
        return url;
      }

      @Override
      public Duration step() {
        return step;
      }

      @Override
      public Map<String, String> resourceAttributes() {
        return Map.of("service.name", "sluice");
      }
    };
    this.registry = new OtlpMeterRegistry(config, Clock.SYSTEM);
    metrics.onNewCounter((name, labels, adder) -> counter(name, labels, adder));
    for (String policy : policies.names()) {
      policyGauges(policy, policies);
    }
    limiters.forEach(this::limit);
  }

  /** A counter of {@link Metrics} as it is first counted: its name and label pairs. */
  private void counter(String name, List<String> labels, LongAdder adder) {
    FunctionCounter.Builder<LongAdder> b = FunctionCounter.builder(name, adder, LongAdder::sum);
    for (int i = 0; i + 1 < labels.size(); i += 2) {
      b.tag(labels.get(i), labels.get(i + 1));
    }
    b.register(registry);
  }

  private void policyGauges(String policy, PolicyRegistry policies) {
    FunctionCounter.builder("sluice.store.errors", policies, r -> stat(r, policy).storeErrors())
        .tag("policy", policy).register(registry);
    FunctionCounter.builder("sluice.degraded.decisions", policies,
        r -> stat(r, policy).degradedDecisions()).tag("policy", policy).register(registry);
    Gauge.builder("sluice.keys", policies, r -> stat(r, policy).keysHeld()).tag("policy", policy)
        .register(registry);
  }

  private static LimiterStats stat(PolicyRegistry r, String policy) {
    PolicyRegistry.Policy p = r.get(policy);
    return p == null ? NONE : p.limiter().stats();
  }

  private void limit(String name, ConcurrencyLimiter l) {
    Gauge.builder("sluice.concurrency.in.flight", l, x -> x.stats().inFlight()).tag("limit", name)
        .register(registry);
    FunctionCounter.builder("sluice.concurrency.acquired", l, x -> x.stats().acquired())
        .tag("limit", name).register(registry);
    for (Refusal r : Refusal.values()) {
      FunctionCounter.builder("sluice.concurrency.refused", l, x -> x.stats().refused(r))
          .tag("limit", name).tag("reason", r.name().toLowerCase(Locale.ROOT)).register(registry);
    }
    for (Outcome o : Outcome.values()) {
      FunctionCounter.builder("sluice.concurrency.ended", l, x -> x.stats().ended(o))
          .tag("limit", name).tag("outcome", o.name().toLowerCase(Locale.ROOT)).register(registry);
    }
  }

  /** Publishes what is left and stops. */
  @Override
  public void close() {
    registry.close();
  }
}

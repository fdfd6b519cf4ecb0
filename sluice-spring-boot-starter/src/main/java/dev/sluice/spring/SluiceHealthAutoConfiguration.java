package dev.sluice.spring;

import dev.sluice.StoreFailure;
import dev.sluice.health.HealthShedder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * Actuator's {@code sluice} health component. Its details name the store, the policies, the
 * failure policy and the store's state ({@code storeState}: {@code up}, or {@code down} with
 * {@code storeError}). Its status is {@code UP} while the shared store answers a ping (always, for
 * the in-memory store); while it does not, it follows {@code sluice.store.health-when-down}: by
 * default ({@code auto}) {@code DOWN} when the failure policy is {@code closed} (no request can be
 * decided) and {@code UP} when it keeps serving ({@code open}, {@code fallback}), so that a load
 * balancer reading the health does not take out every instance that is serving correctly.
 * {@code management.health.sluice.enabled=false} turns it off.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#shedding-by-health-sluicehealth">docs/spring.md, "Shedding by health (sluice.health)"</a>.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(SluiceLimiters.class)
@ConditionalOnEnabledHealthIndicator("sluice")
public class SluiceHealthAutoConfiguration {
  @Bean(name = "sluiceHealthIndicator")
  public HealthIndicator sluiceHealthIndicator(SluiceLimiters limiters,
      ObjectProvider<HealthShedder> health) {
    HealthShedder shedder = health.getIfAvailable();
    return () -> {
      Health.Builder builder = Health.up().withDetail("store", limiters.storeName())
          .withDetail("policies", limiters.all().keySet())
          .withDetail("failurePolicy", failurePolicy(limiters.settings.failure));
      if (shedder != null) {
        builder.withDetail("shedding", shedding(shedder));
      }
      if (limiters.store().isEmpty()) {
        return builder.build();
      }
      try {
        limiters.store().get().ping();
        return builder.withDetail("storeState", "up").build();
      } catch (RuntimeException e) {
        return builder.status(new Status(limiters.settings.healthWhenDown))
            .withDetail("storeState", "down").withDetail("storeError", String.valueOf(e))
            .build();
      }
    };
  }

  /**
   * The health shedder's state: its pressure, refusals, and each signal's last value, band and
   * whether it sheds. Shedding leaves the status UP: the instance serves what it can.
   */
  static Map<String, Object> shedding(HealthShedder shedder) {
    Map<String, Object> state = new LinkedHashMap<>();
    state.put("pressure", shedder.pressure());
    state.put("refused", shedder.refused());
    state.put("inFlight", shedder.inFlight());
    List<Map<String, Object>> signals = new ArrayList<>();
    for (HealthShedder.SignalValue v : shedder.signals()) {
      Map<String, Object> signal = new LinkedHashMap<>();
      signal.put("name", v.name());
      signal.put("value", Double.isNaN(v.value()) ? null : v.value());
      signal.put("start", v.start());
      signal.put("full", v.full());
      signal.put("shedding", v.shedding());
      signals.add(signal);
    }
    state.put("signals", signals);
    return state;
  }

  private static String failurePolicy(StoreFailure f) {
    return switch (f) {
      case FAIL_OPEN -> "open";
      case FALLBACK_IN_MEMORY -> "fallback";
      default -> "closed";
    };
  }
}

package dev.sluice.spring;

import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * Actuator's {@code sluice} health component: {@code UP} when the shared store answers a ping
 * (always, for the in-memory store), {@code DOWN} with the error when it does not; the details
 * name the store and the policies. {@code management.health.sluice.enabled=false} turns it off.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(SluiceLimiters.class)
@ConditionalOnEnabledHealthIndicator("sluice")
public class SluiceHealthAutoConfiguration {
  @Bean(name = "sluiceHealthIndicator")
  public HealthIndicator sluiceHealthIndicator(SluiceLimiters limiters) {
    return new AbstractHealthIndicator("Sluice's store is down") {
      @Override
      protected void doHealthCheck(Health.Builder builder) {
        builder.withDetail("store", limiters.storeName())
            .withDetail("policies", limiters.all().keySet());
        limiters.store().ifPresent(s -> s.ping());
        builder.up();
      }
    };
  }
}

package dev.sluice.spring;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Actuator's {@code sluicequotas} endpoint ({@link SluiceQuotasEndpoint}) when quotas are on
 * ({@code sluice.quotas.enabled}), and its {@code sluiceconsole} endpoint ({@link
 * SluiceConsoleEndpoint}) when the console is ({@code sluice.console.enabled}), each when Actuator
 * exposes it ({@code management.endpoints.web.exposure.include}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#actuator-and-micrometer">docs/spring.md, "Actuator and Micrometer"</a>.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class, afterName =
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration")
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(SluiceLimiters.class)
public class SluiceEndpointsAutoConfiguration {
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnAvailableEndpoint
  @ConditionalOnProperty(prefix = "sluice.quotas", name = "enabled", havingValue = "true")
  public SluiceQuotasEndpoint sluiceQuotasEndpoint(SluiceLimiters limiters,
      SluiceProperties properties) {
    return new SluiceQuotasEndpoint(limiters, properties.getQuotas().isWriteEnabled());
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @ConditionalOnAvailableEndpoint
  @ConditionalOnProperty(prefix = "sluice.console", name = "enabled", havingValue = "true")
  public SluiceConsoleEndpoint sluiceConsoleEndpoint(SluiceLimiters limiters,
      ObjectProvider<MeterRegistry> meters, Environment env) {
    return new SluiceConsoleEndpoint(limiters, meters.getIfUnique(),
        () -> env.getProperty("spring.application.name", "application") + ":"
            + env.getProperty("local.server.port", "?"));
  }
}

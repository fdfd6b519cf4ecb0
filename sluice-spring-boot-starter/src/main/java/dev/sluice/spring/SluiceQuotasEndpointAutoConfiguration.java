package dev.sluice.spring;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Actuator's {@code sluicequotas} endpoint ({@link SluiceQuotasEndpoint}) when quotas are on
 * ({@code sluice.quotas.enabled}) and Actuator exposes it
 * ({@code management.endpoints.web.exposure.include}).
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(SluiceLimiters.class)
@ConditionalOnProperty(prefix = "sluice.quotas", name = "enabled", havingValue = "true")
public class SluiceQuotasEndpointAutoConfiguration {
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnAvailableEndpoint
  public SluiceQuotasEndpoint sluiceQuotasEndpoint(SluiceLimiters limiters,
      SluiceProperties properties) {
    return new SluiceQuotasEndpoint(limiters, properties.getQuotas().isWriteEnabled());
  }
}

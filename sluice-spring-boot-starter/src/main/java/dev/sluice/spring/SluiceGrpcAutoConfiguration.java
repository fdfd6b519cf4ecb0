package dev.sluice.spring;

import dev.sluice.concurrency.AdaptiveThrottle;
import dev.sluice.concurrency.RetryBudget;
import dev.sluice.grpc.GrpcKey;
import dev.sluice.grpc.SluiceClientInterceptor;
import dev.sluice.grpc.SluiceServerInterceptor;
import io.grpc.ServerInterceptor;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * gRPC (docs/grpc.md, "With Spring Boot"), when sluice-grpc and grpc-java are on the class path:
 * a {@link SluiceServerInterceptor} bean for {@code sluice.grpc.server.rules} (over the
 * policies' and concurrency limits' limiters, so their meters count its decisions) and a {@link
 * SluiceClientInterceptor} bean for {@code sluice.grpc.client}, with meters of its throttle and
 * budget. Every mistake in the settings is named at startup. Register them with your gRPC server
 * and channels (Spring gRPC and grpc-spring pick up interceptor beans marked as global).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#grpc-sluicegrpc">docs/spring.md, "gRPC (sluice.grpc)"</a>.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class)
@ConditionalOnClass({SluiceServerInterceptor.class, ServerInterceptor.class})
@ConditionalOnBean(SluiceLimiters.class)
public class SluiceGrpcAutoConfiguration {
  /** The server interceptor of {@code sluice.grpc.server.rules}; none without rules. */
  @Bean
  @ConditionalOnMissingBean
  public SluiceServerInterceptor sluiceGrpcServerInterceptor(SluiceLimiters limiters,
      SluiceProperties properties) {
    SluiceProperties.GrpcServer g = properties.getGrpc().getServer();
    List<String> problems = new ArrayList<>();
    SluiceServerInterceptor.Builder b = SluiceServerInterceptor.builder();
    int rules = 0;
    for (int i = 0; i < g.getRules().size(); i++) {
      SluiceProperties.GrpcRule r = g.getRules().get(i);
      String at = "sluice.grpc.server.rules[" + i + "]";
      GrpcKey key = key(r.getKey(), at + ".key", problems);
      if ((r.getPolicy() == null) == (r.getLimit() == null)) {
        problems.add(at + ": name a policy (a rate rule) or a limit (a concurrency rule), one of"
            + " them");
        continue;
      }
      try {
        if (r.getPolicy() != null) {
          if (!limiters.all().containsKey(r.getPolicy())) {
            problems.add(at + ".policy: no policy '" + r.getPolicy() + "' (sluice.policies has "
                + limiters.all().keySet() + ")");
          } else if (key != null) {
            b.rate(r.getPolicy(), r.getMethods(), limiters.get(r.getPolicy()), key);
            rules++;
          }
        } else if (!limiters.allConcurrency().containsKey(r.getLimit())) {
          problems.add(at + ".limit: no concurrency limit '" + r.getLimit()
              + "' (sluice.concurrency.limits has " + limiters.allConcurrency().keySet() + ")");
        } else if (key != null) {
          b.concurrency(r.getLimit(), r.getMethods(), limiters.concurrency(r.getLimit()), key);
          rules++;
        }
      } catch (IllegalArgumentException e) {
        problems.add(at + ".methods: " + e.getMessage());
      }
    }
    try {
      b.maxWait(g.getMaxWait()).priorityHeader(g.getPriorityHeader());
    } catch (IllegalArgumentException | NullPointerException e) {
      problems.add("sluice.grpc.server: " + e.getMessage());
    }
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return rules == 0 ? null : b.build();
  }

  /** The client interceptor of {@code sluice.grpc.client}; none while neither part is on. */
  @Bean
  @ConditionalOnMissingBean
  public SluiceClientInterceptor sluiceGrpcClientInterceptor(SluiceProperties properties,
      ObjectProvider<MeterRegistry> registry) {
    SluiceProperties.GrpcClient c = properties.getGrpc().getClient();
    if (!c.getThrottle().isEnabled() && !c.getRetryBudget().isEnabled()) {
      return null;
    }
    List<String> problems = new ArrayList<>();
    SluiceClientInterceptor.Builder b = SluiceClientInterceptor.builder();
    MeterRegistry meters = registry.getIfUnique();
    if (c.getThrottle().isEnabled()) {
      try {
        AdaptiveThrottle t = AdaptiveThrottle.builder().k(c.getThrottle().getK())
            .window(c.getThrottle().getWindow()).build();
        b.throttle(t);
        if (meters != null) {
          Gauge.builder("sluice.grpc.throttle.reject.probability", t,
              AdaptiveThrottle::rejectProbability).description("The probability the client"
              + " throttle refuses a call now").register(meters);
        }
      } catch (IllegalArgumentException | NullPointerException e) {
        problems.add("sluice.grpc.client.throttle: " + e.getMessage());
      }
    }
    if (c.getRetryBudget().isEnabled()) {
      try {
        SluiceProperties.Budget s = c.getRetryBudget();
        RetryBudget budget = RetryBudget.builder().ratio(s.getRatio())
            .minPerSecond(s.getMinPerSecond()).window(s.getWindow()).build();
        b.retryBudget(budget).maxAttempts(c.getMaxAttempts());
        if (meters != null) {
          FunctionCounter.builder("sluice.grpc.retries", budget, RetryBudget::retriesAllowed)
              .tag("result", "allowed").description("Retries the budget allowed")
              .register(meters);
          FunctionCounter.builder("sluice.grpc.retries", budget, RetryBudget::retriesRefused)
              .tag("result", "refused").description("Retries the budget refused")
              .register(meters);
          Gauge.builder("sluice.grpc.retry.budget.available", budget, RetryBudget::available)
              .description("Retries the budget would allow now").register(meters);
        }
      } catch (IllegalArgumentException | NullPointerException e) {
        String m = String.valueOf(e.getMessage());
        problems.add((m.startsWith("maxAttempts") ? "sluice.grpc.client.max-attempts: "
            : "sluice.grpc.client.retry-budget: ") + m);
      }
    }
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return b.build();
  }

  private static GrpcKey key(String spec, String at, List<String> problems) {
    String k = spec == null ? "" : spec.trim();
    String lower = k.toLowerCase(Locale.ROOT);
    try {
      if (lower.startsWith("metadata:")) {
        return GrpcKey.metadata(k.substring("metadata:".length()).trim());
      }
      return switch (lower) {
        case "method" -> GrpcKey.method();
        case "service" -> GrpcKey.service();
        case "peer" -> GrpcKey.peer();
        case "global" -> GrpcKey.global("global");
        default -> {
          problems.add(at + ": must be method, service, peer, metadata:NAME or global but was '"
              + spec + "'");
          yield null;
        }
      };
    } catch (IllegalArgumentException e) {
      problems.add(at + ": " + e.getMessage());
      return null;
    }
  }
}

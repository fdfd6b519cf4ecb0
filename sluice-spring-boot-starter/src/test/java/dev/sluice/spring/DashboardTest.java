package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.testkit.Dashboards;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * docs/grafana/sluice-micrometer.json against what the starter's meters export in Prometheus
 * form: a policy, a concurrency limit with a route rule, and health shedding, after a little
 * traffic; every metric its queries name is scraped, with the labels they use.
 */
class DashboardTest {
  @Test
  void theMicrometerDashboard_queriesWhatTheMetersExport() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withBean(MeterRegistry.class, () -> new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
        .withPropertyValues("sluice.store.type=memory",
            "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=2",
            "sluice.policies.api.rate=1/1h", "sluice.concurrency.limits.db.limit=2",
            "sluice.concurrency.rules[0].path=/reports/**", "sluice.concurrency.rules[0].limit=db",
            "sluice.concurrency.rules[0].per=route",
            "sluice.health.signals[0].signal=heap", "sluice.health.signals[0].start=0.98",
            "sluice.health.signals[0].full=0.99")
        .run(context -> {
          assertThat(context).hasNotFailed();
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          for (int i = 0; i < 4; i++) {
            limiters.get("api").tryAcquire("k");
          }
          ConcurrencyLimiter db = limiters.concurrency("db");
          db.tryAcquire("k", 1, Priority.NORMAL).permit().close();
          db.tryAcquire("k", 3, Priority.NORMAL);   // too heavy: a refusal
          context.getBean(HealthShedder.class).admit(Priority.NORMAL).end();
          String scrape = ((PrometheusMeterRegistry) context.getBean(MeterRegistry.class))
              .scrape();
          Dashboards.assertMatches(Path.of("../docs/grafana/sluice-micrometer.json"), scrape);
        });
  }
}

package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.concurrency.ConcurrencySpec;
import dev.sluice.Algorithm;
import dev.sluice.Limit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Properties to model, and every bad property failing startup with its name and the problem. */
class ConfigurationTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
      .withPropertyValues("sluice.store.type=memory");

  @Test
  void policiesAreReadAsTheServicesPoliciesFileReadsThem() {
    runner.withPropertyValues(
        "sluice.policies.api.algorithm=gcra", "sluice.policies.api.burst=5",
        "sluice.policies.api.rate=1.5/s",
        "sluice.policies.login.limits[0].algorithm=fixed-window",
        "sluice.policies.login.limits[0].limit=5", "sluice.policies.login.limits[0].window=1m",
        "sluice.policies.login.limits[0].penalty=30s",
        "sluice.policies.login.limits[1].algorithm=leaky-bucket",
        "sluice.policies.login.limits[1].capacity=2", "sluice.policies.login.limits[1].rate=10/1m")
        .run(context -> {
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          Limit api = limiters.get("api").limits().get(0);
          assertThat(api.algorithm()).isEqualTo(Algorithm.GCRA);
          assertThat(api.capacity()).isEqualTo(5);
          assertThat(api.rate().perSecond()).isEqualTo(1.5);
          assertThat(api.name()).isEqualTo("api");
          assertThat(limiters.get("login").limits()).extracting(Limit::name)
              .containsExactly("login/1", "login/2");
          assertThat(limiters.get("login").limits().get(0).penalty()).isEqualTo(Duration.ofSeconds(30));
          assertThat(limiters.storeName()).isEqualTo("memory");
        });
  }

  @Test
  void aMisspeltHttpMethod_isRefused_andTheStartupLineCounts() {
    runner.withPropertyValues("sluice.policies.api.algorithm=gcra", "sluice.policies.api.burst=5",
        "sluice.policies.api.rate=1/s", "sluice.rules[0].path=/api/**",
        "sluice.rules[0].policy=api", "sluice.rules[0].methods=GET,GETT")
        .run(context -> {
          assertThat(context).hasFailed();
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(((SluiceConfigurationException) root).problems()).containsExactly(
              "sluice.rules[0].methods: not an HTTP method: 'GETT' (expected one of GET, HEAD,"
                  + " POST, PUT, DELETE, PATCH, OPTIONS, TRACE, CONNECT) in [GET, GETT]");
        });
    assertThat(SluiceAutoConfiguration.startupLine(java.util.List.of("api"), "memory", null, 1,
        false)).isEqualTo("1 policy [api] on the memory store, 1 rule");
    assertThat(SluiceAutoConfiguration.startupLine(java.util.List.of("a", "b"), "redis",
        "redis://x", 0, true))
        .isEqualTo("2 policies [a, b] on the redis store (redis://x), 0 rules, dry run");
  }

  @Test
  void healthMistakes_areEachNamed_atStartup() {
    runner.withPropertyValues("sluice.health.signals[0].signal=cpuu",
        "sluice.health.signals[0].start=0.8", "sluice.health.signals[0].full=0.9",
        "sluice.health.signals[1].signal=gc", "sluice.health.signals[1].start=0.5",
        "sluice.health.signals[1].full=0.2", "sluice.health.signals[2].signal=heap",
        "sluice.health.hysteresis=1.5", "sluice.health.sample-every=0s")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactly(
              "sluice.health.hysteresis: hysteresis must be from 0 to below 1 but was 1.5",
              "sluice.health.sample-every: sampleEvery must be between 1 ms and 1 minute but was"
                  + " PT0S",
              "sluice.health.signals[0].signal: no signal 'cpuu' (built in, or a HealthSignal"
                  + " bean of that name: [container-cpu, cpu-pressure, event-loop, gc, heap,"
                  + " hikari, process-cpu, web-server])",
              "sluice.health.signals[1]: signal gc needs start < full, both finite, but was start"
                  + " 0.5, full 0.2",
              "sluice.health.signals[2]: needs start and full (where shedding starts, and where"
                  + " all but critical work is shed)");
        });
    runner.withPropertyValues("sluice.health.signals[0].signal=container-cpu",
        "sluice.health.signals[0].start=0.8", "sluice.health.signals[0].full=0.95")
        .run(context -> assertThat(context.getBean(dev.sluice.health.HealthShedder.class)
            .signals()).extracting(dev.sluice.health.HealthShedder.SignalValue::name)
            .containsExactly("container.cpu"));
  }

  /** docs/spring.md's fair queuing block builds the limit it says, fair queuing on. */
  @Test
  void theFairBlockOfSpringMd_buildsItsLimit() throws Exception {
    String doc = java.nio.file.Files.readString(java.nio.file.Path.of("../docs/spring.md"));
    int start = doc.indexOf("  ```yaml\n  sluice:\n    concurrency:\n      limits:\n        reports:")
        + "  ```yaml\n".length();
    String yaml = doc.substring(start, doc.indexOf("  ```", start)).replaceAll("(?m)^  ", "");
    var sources = new org.springframework.boot.env.YamlPropertySourceLoader().load("spring.md",
        new org.springframework.core.io.ByteArrayResource(yaml.getBytes(
            java.nio.charset.StandardCharsets.UTF_8)));
    runner.withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(sources.get(0)))
        .run(context -> {
          assertThat(context).hasNotFailed();
          ConcurrencyLimiter reports = context.getBean(SluiceLimiters.class).concurrency("reports");
          assertThat(reports.limit("global")).isEqualTo(8);
          dev.sluice.concurrency.Permit held = reports.tryAcquire("global", 8).permit();
          reports.acquireAsync("global", "acme", 1, dev.sluice.concurrency.Priority.NORMAL,
              java.time.Duration.ofSeconds(5));
          assertThat(reports.stats().flows(dev.sluice.concurrency.Priority.NORMAL))
              .as("fair queuing, with the flow it was given").isBetween(0.9, 1.0);
          held.close();
        });
  }

  /** docs/spring.md's sluice.health block, with the bean it names, builds the shedder it says. */
  @Test
  void theHealthBlockOfSpringMd_buildsItsShedder() throws Exception {
    String doc = java.nio.file.Files.readString(java.nio.file.Path.of("../docs/spring.md"));
    int start = doc.indexOf("```yaml\nsluice:\n  health:") + "```yaml\n".length();
    String yaml = doc.substring(start, doc.indexOf("```", start));
    var sources = new org.springframework.boot.env.YamlPropertySourceLoader().load("spring.md",
        new org.springframework.core.io.ByteArrayResource(yaml.getBytes(
            java.nio.charset.StandardCharsets.UTF_8)));
    runner.withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(sources.get(0)))
        .withBean("dbPool", dev.sluice.health.HealthSignal.class,
            () -> dev.sluice.health.HealthSignal.of("db-pool", () -> 0.5))
        .run(context -> {
          dev.sluice.health.HealthShedder shedder =
              context.getBean(dev.sluice.health.HealthShedder.class);
          assertThat(shedder.signals()).extracting(dev.sluice.health.HealthShedder.SignalValue::name,
              dev.sluice.health.HealthShedder.SignalValue::start,
              dev.sluice.health.HealthShedder.SignalValue::full)
              .containsExactly(org.assertj.core.groups.Tuple.tuple("container.cpu", 0.80, 0.95),
                  org.assertj.core.groups.Tuple.tuple("db-pool", 0.90, 1.0));
        });
  }

  private static java.util.List<String> problems(Throwable failure) {
    Throwable root = failure;
    while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
      root = root.getCause();
    }
    return ((SluiceConfigurationException) root).problems();
  }

  @Test
  void concurrencyLimits_areRead_andEveryBadOneIsNamed() {
    runner.withPropertyValues("sluice.concurrency.limits.db.limit=20",
        "sluice.concurrency.limits.db.lease=10s", "sluice.concurrency.limits.db.queue-order=lifo",
        "sluice.concurrency.limits.db.shares.sheddable=0.8",
        "sluice.concurrency.rules[0].path=/api/**", "sluice.concurrency.rules[0].limit=db",
        "sluice.concurrency.rules[1].path=/batch/**", "sluice.concurrency.rules[1].limit=db",
        "sluice.concurrency.rules[1].deadline-headers=",
        "sluice.concurrency.rules[2].path=/rpc/**", "sluice.concurrency.rules[2].limit=db",
        "sluice.concurrency.rules[2].deadline-headers=X-Deadline-Ms,grpc-timeout")
        .run(context -> {
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          assertThat(limiters.settings.concurrency.rules)
              .extracting(ConcurrencySettings.RuleSpec::deadlineHeaders)
              .containsExactly(List.of("grpc-timeout"), List.of(),
                  List.of("X-Deadline-Ms", "grpc-timeout"));
          assertThat(limiters.allConcurrency()).containsOnlyKeys("db");
          assertThat(limiters.concurrency("db").limit("any")).isEqualTo(20);
          for (int i = 0; i < 16; i++) {
            assertThat(limiters.concurrency("db").tryAcquire("k", 1,
                dev.sluice.concurrency.Priority.SHEDDABLE).isAcquired()).isEqualTo(i < 16);
          }
          assertThat(limiters.concurrency("db").tryAcquire("k", 1,
              dev.sluice.concurrency.Priority.SHEDDABLE).refusal())
              .isEqualTo(dev.sluice.concurrency.Refusal.SHED);
        });
    runner.withPropertyValues("sluice.concurrency.limits.db.limit=0",
        "sluice.concurrency.limits.db.lease=0s", "sluice.concurrency.limits.db.queue-order=random",
        "sluice.concurrency.limits.db.shares.sheddable=1.5",
        "sluice.concurrency.limits.db.shares.urgent=0.5",
        "sluice.concurrency.limits.nolimit.max-waiters=-1",
        "sluice.concurrency.rules[0].path=api", "sluice.concurrency.rules[0].limit=dbb",
        "sluice.concurrency.rules[0].per=tenant", "sluice.concurrency.rules[0].key=cookie",
        "sluice.concurrency.rules[0].max-wait=2m",
        "sluice.concurrency.rules[0].priority-header=X Priority",
        "sluice.concurrency.rules[0].deadline-headers[0]=grpc-timeout",
        "sluice.concurrency.rules[0].deadline-headers[1]=x deadline")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactlyInAnyOrder(
              "sluice.concurrency.limits.db: 'limit' must be a whole number from 1 to "
                  + "2147483647 but was '0'",
              "sluice.concurrency.limits.db: 'lease' must be between 1ms and 1d but was '0s'",
              "sluice.concurrency.limits.db: 'queue-order' must be fifo or lifo but was "
                  + "'random'",
              "sluice.concurrency.limits.db: the share of sheddable must be between 0 and 1 "
                  + "but was '1.5'",
              "sluice.concurrency.limits.db: unknown priority 'urgent' (expected critical, "
                  + "normal or sheddable)",
              "sluice.concurrency.limits.nolimit: 'max-waiters' must be a whole number from "
                  + "0 to 1000000 but was '-1'",
              "sluice.concurrency.limits.nolimit: 'limit' is missing (the most permits in "
                  + "flight per key, or adaptive: gradient)",
              "sluice.concurrency.rules[0].path: a path pattern starts with '/' but was 'api'",
              "sluice.concurrency.rules[0].limit: no limit 'dbb' under "
                  + "sluice.concurrency.limits (there are [db, nolimit])",
              "sluice.concurrency.rules[0].per: must be client, route or global but was "
                  + "'tenant'",
              "sluice.concurrency.rules[0].key: must be ip, principal or header:NAME but was "
                  + "'cookie'",
              "sluice.concurrency.rules[0].max-wait: must be between 0 and 1m but was PT2M",
              "sluice.concurrency.rules[0].priority-header: not an HTTP header name: 'X "
                  + "Priority'",
              "sluice.concurrency.rules[0].deadline-headers[1]: not an HTTP header name: 'x "
                  + "deadline'");
        });
  }

  /**
   * Fair queuing from YAML: fair.* on a limit and flow on a rule; bad values are named in the
   * properties' spelling, and a flow on a limit without fair queuing is a startup error.
   */
  @Test
  void fairQueuing_isRead_andBadSettingsNamed() {
    runner.withPropertyValues("sluice.concurrency.limits.db.limit=2",
        "sluice.concurrency.limits.db.fair.queues=64",
        "sluice.concurrency.limits.db.fair.hand-size=4",
        "sluice.concurrency.limits.db.fair.memory=30s",
        "sluice.concurrency.rules[0].path=/api/**", "sluice.concurrency.rules[0].limit=db",
        "sluice.concurrency.rules[0].flow=header:X-Tenant")
        .run(context -> {
          assertThat(context).hasNotFailed();
          ConcurrencyLimiter db = context.getBean(SluiceLimiters.class).concurrency("db");
          dev.sluice.concurrency.Permit held = db.tryAcquire("k", 2).permit();
          db.acquireAsync("k", "acme", 1, dev.sluice.concurrency.Priority.NORMAL,
              java.time.Duration.ofSeconds(5));
          assertThat(db.stats().flows(dev.sluice.concurrency.Priority.NORMAL))
              .as("its waiters are fair queued").isBetween(0.9, 1.0);
          held.close();
        });
    runner.withPropertyValues("sluice.concurrency.limits.db.limit=2",
        "sluice.concurrency.limits.db.fair.queues=8",
        "sluice.concurrency.limits.db.fair.hand-size=9",
        "sluice.concurrency.limits.db.fair.queue-length=0",
        "sluice.concurrency.limits.plain.limit=2",
        "sluice.concurrency.rules[0].path=/api/**", "sluice.concurrency.rules[0].limit=plain",
        "sluice.concurrency.rules[0].flow=header:X-Tenant",
        "sluice.concurrency.rules[1].path=/b/**", "sluice.concurrency.rules[1].limit=db",
        "sluice.concurrency.rules[1].flow=cookie")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactlyInAnyOrder(
              "sluice.concurrency.limits.db: 'fair.hand-size' (9) is above 'fair.queues' (8)",
              "sluice.concurrency.limits.db: 'fair.queue-length' must be a whole number from 1"
                  + " to 1000000 but was '0'",
              "sluice.concurrency.rules[0].flow: the limit 'plain' has no fair queuing (set"
                  + " sluice.concurrency.limits.plain.fair) to serve its waiters fairly by flow",
              "sluice.concurrency.rules[1].flow: must be ip, principal or header:NAME but was"
                  + " 'cookie'");
        });
  }

  /**
   * An adaptive limit from YAML: gradient or aimd with its bounds, starting at initial-limit (the
   * limit meters read); bad bounds and a fixed limit beside it are named.
   */
  @Test
  void adaptiveConcurrencyLimits_areRead_andBadOnesNamed() {
    runner.withPropertyValues("sluice.concurrency.limits.db.adaptive=gradient",
        "sluice.concurrency.limits.db.initial-limit=7", "sluice.concurrency.limits.db.max-limit=50",
        "sluice.concurrency.limits.jobs.adaptive=AIMD")
        .run(context -> {
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          assertThat(limiters.concurrency("db").limit("k")).isEqualTo(7);
          for (int i = 0; i < 7; i++) {
            assertThat(limiters.concurrency("db").tryAcquire("k").isAcquired()).isTrue();
          }
          assertThat(limiters.concurrency("db").tryAcquire("k").isAcquired()).isFalse();
          assertThat(limiters.concurrency("jobs").limit("k")).isEqualTo(20);
        });
    runner.withPropertyValues("sluice.concurrency.limits.db.adaptive=vegas",
        "sluice.concurrency.limits.g.adaptive=gradient", "sluice.concurrency.limits.g.limit=5",
        "sluice.concurrency.limits.g.min-limit=60", "sluice.concurrency.limits.g.max-limit=50",
        "sluice.concurrency.limits.g.initial-limit=0")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactlyInAnyOrder(
              "sluice.concurrency.limits.db: 'adaptive' must be none, gradient or aimd but "
                  + "was 'vegas'",
              "sluice.concurrency.limits.db: 'limit' is missing (the most permits in flight "
                  + "per key, or adaptive: gradient)",
              "sluice.concurrency.limits.g: 'initial-limit' must be a whole number from 1 to "
                  + "1000000 but was '0'",
              "sluice.concurrency.limits.g: 'limit' and 'adaptive: gradient' exclude each "
                  + "other (bound an adaptive limit with min-limit and max-limit)",
              "sluice.concurrency.limits.g: 'min-limit' (60) is above 'max-limit' (50)");
        });
  }

  /**
   * Groups from YAML: keys "tenant/partition" grouped by prefix share the group's 4 permits; live
   * is assured 3, everything else borrows up to limit - reserve; bad settings are named.
   */
  @Test
  void concurrencyGroups_areRead_andBadOnesNamed() {
    runner.withPropertyValues("sluice.concurrency.limits.db.group.limit=4",
        "sluice.concurrency.limits.db.group.assured-keys.[acme/live]=3",
        "sluice.concurrency.limits.db.group.reserve=3",
        "sluice.concurrency.limits.db.group.key=prefix")
        .run(context -> {
          assertThat(context).hasNotFailed();
          ConcurrencyLimiter db = context.getBean(SluiceLimiters.class)
              .concurrency("db");
          var batch = db.tryAcquire("acme/batch");
          assertThat(batch.isAcquired()).isTrue();
          assertThat(batch.isBorrowed()).isTrue();
          assertThat(db.tryAcquire("acme/batch").isAcquired())
              .as("a second borrow would pass limit - reserve = 1").isFalse();
          for (int i = 0; i < 3; i++) {
            assertThat(db.tryAcquire("acme/live").isAcquired()).as("live's assured 3").isTrue();
          }
          assertThat(db.tryAcquire("acme/live").isAcquired()).as("the group's 4").isFalse();
          // issue 44, item 7: the key a rule builds from a header, x-tenant:acme/live, is
          // assured what assured-keys gives acme/live, the spelling users write
          var fromHeader = db.tryAcquire("x-tenant:acme/live");
          assertThat(fromHeader.isAcquired()).as("assured 3 in its own group").isTrue();
          assertThat(fromHeader.isBorrowed()).as("within its assured share").isFalse();
          assertThat(db.tryAcquire("other/live").isAcquired()).as("another group").isTrue();
          assertThatThrownBy(() -> db.tryAcquire("nogroup"))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("key 'nogroup' has no group");
        });
    runner.withPropertyValues("sluice.concurrency.limits.a.group.assured=2",
        "sluice.concurrency.limits.b.group.limit=4", "sluice.concurrency.limits.b.group.assured=5",
        "sluice.concurrency.limits.b.group.assured-keys.live=-1",
        "sluice.concurrency.limits.b.group.reserve=9", "sluice.concurrency.limits.b.group.key=hash",
        "sluice.concurrency.limits.c.adaptive=gradient", "sluice.concurrency.limits.c.group.limit=4")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactlyInAnyOrder(
              "sluice.concurrency.limits.a: 'group.limit' is missing (the permits in flight "
                  + "the group's keys hold at most, together)",
              "sluice.concurrency.limits.b: 'group.assured' must be a whole number from 0 to "
                  + "4 but was '5'",
              "sluice.concurrency.limits.b: 'group.reserve' must be a whole number from 0 to "
                  + "4 but was '9'",
              "sluice.concurrency.limits.b: 'group.key' must be all or prefix but was 'hash'",
              "sluice.concurrency.limits.b: 'group.assured-keys.live' must be a whole number "
                  + "from 0 to 4 but was '-1'",
              "sluice.concurrency.limits.c: adaptive limits and groups do not combine yet (a "
                  + "group's keys share a fixed limit)");
        });
  }

  /** CoDel from YAML: codel-target and codel-interval together; one alone or out of order named. */
  @Test
  void codel_isRead_andBadSettingsNamed() {
    runner.withPropertyValues("sluice.concurrency.limits.db.limit=1",
        "sluice.concurrency.limits.db.codel-target=5ms",
        "sluice.concurrency.limits.db.codel-interval=100ms")
        .run(context -> {
          assertThat(context).hasNotFailed();
          ConcurrencySpec db = context.getBean(SluiceLimiters.class).settings
              .concurrency.limits.get("db");
          assertThat(db.codelTarget()).isEqualTo(Duration.ofMillis(5));
          assertThat(db.codelInterval()).isEqualTo(Duration.ofMillis(100));
        });
    runner.withPropertyValues("sluice.concurrency.limits.a.limit=1",
        "sluice.concurrency.limits.a.codel-target=5ms",
        "sluice.concurrency.limits.b.limit=1", "sluice.concurrency.limits.b.codel-target=1s",
        "sluice.concurrency.limits.b.codel-interval=100ms")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactlyInAnyOrder(
              "sluice.concurrency.limits.a: CoDel needs both 'codel-target' and "
                  + "'codel-interval' (such as 5ms and 100ms)",
              "sluice.concurrency.limits.b: CoDel needs 0 < codel-target <= codel-interval "
                  + "<= 1m but codel-target was '1s' and codel-interval '100ms'");
        });
  }

  /** A bean whose method names a concurrency limit that is not configured. */
  static class Exporter {
    @ConcurrencyLimited(limit = "nope", maxWait = "soon")
    public String export() {
      return "x";
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class WithExporter {
    @Bean
    Exporter exporter() {
      return new Exporter();
    }
  }

  @Test
  void aConcurrencyLimitedMethod_namingNoLimit_stopsStartup() {
    runner.withUserConfiguration(WithExporter.class)
        .withPropertyValues("sluice.concurrency.limits.db.limit=2")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(problems(context.getStartupFailure())).containsExactly(
              "@ConcurrencyLimited on " + Exporter.class.getName() + ".export: limit: no limit"
                  + " 'nope' under sluice.concurrency.limits (there are [db])",
              "@ConcurrencyLimited on " + Exporter.class.getName() + ".export: maxWait: must be a"
                  + " duration of at most 1m such as 250ms or 5s but was 'soon'");
        });
  }

  @Test
  void everyProblemOfOnePolicy_isReported_eachUnderItsOwnProperty() {
    runner.withPropertyValues(
        "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=-1",
        "sluice.policies.api.rate=banana", "sluice.policies.api.penalty=soon",
        "sluice.policies.win.algorithm=fixed-window", "sluice.policies.win.limit=0",
        "sluice.policies.win.window=0s",
        "sluice.policies.neg.algorithm=gcra", "sluice.policies.neg.burst=-3",
        "sluice.policies.neg.rate=5/s")
        .run(context -> {
          assertThat(context).hasFailed();
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(((SluiceConfigurationException) root).problems()).containsExactlyInAnyOrder(
              "sluice.policies.api.capacity: 'capacity' must be positive but was '-1'",
              "sluice.policies.api.rate: 'rate' must look like 10/s, 100/1m, 1.5/s or 5/250ms but"
                  + " was 'banana'",
              "sluice.policies.api.penalty: 'penalty' must be a duration such as 250ms, 30s, 5m,"
                  + " 1h or 1d but was 'soon'",
              "sluice.policies.win.limit: 'limit' must be positive but was '0'",
              "sluice.policies.win.window: 'window' must be a duration such as 250ms, 30s, 5m, 1h"
                  + " or 1d but was '0s'",
              "sluice.policies.neg.burst: 'burst' must be positive but was '-3'");
          FailureAnalysis analysis = new SluiceFailureAnalyzer().analyze(context.getStartupFailure());
          assertThat(analysis.getDescription())
              .contains("sluice.policies.api.capacity: 'capacity' must be positive but was '-1'")
              .contains("sluice.policies.api.rate: 'rate' must look like");
        });
  }

  @Test
  void everyBadPropertyFailsStartup_namingTheProperty_andTheProblem() {
    runner.withPropertyValues(
        "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=ten",
        "sluice.policies.api.rate=10 per second",
        "sluice.policies.win.algorithm=fixed-window", "sluice.policies.win.capacity=5",
        "sluice.policies.bad.algorithm=sliding-windows",
        "sluice.policies.both.algorithm=gcra", "sluice.policies.both.limits[0].algorithm=gcra",
        "sluice.headers=ietf2", "sluice.missing-key=drop",
        "sluice.trusted-proxies=10.0.0.0/33",
        "sluice.store.failure=maybe", "sluice.store.timeout=5m",
        "sluice.rules[0].path=api/**", "sluice.rules[0].policy=nope",
        "sluice.rules[0].key=cookie:x", "sluice.rules[0].cost=-2",
        "sluice.policies.w2.algorithm=fixed-window", "sluice.policies.w2.limit=5",
        "sluice.policies.w2.window=1s",
        "sluice.rules[1].path=/w", "sluice.rules[1].policy=w2", "sluice.rules[1].queue=true")
        .run(context -> {
          assertThat(context).hasFailed();
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(root).isInstanceOf(SluiceConfigurationException.class);
          assertThat(((SluiceConfigurationException) root).problems()).containsExactlyInAnyOrder(
              "sluice.headers: must be ietf, legacy or none but was 'ietf2'",
              "sluice.missing-key: must be reject, allow or shared but was 'drop'",
              "sluice.trusted-proxies: a trusted proxy must be an IP address or a CIDR block such"
                  + " as 10.0.0.0/8 but was '10.0.0.0/33'",
              "sluice.store.failure: must be closed, open or fallback but was 'maybe'",
              "sluice.store.timeout: must be between 1ms and 1m but was PT5M",
              "sluice.policies.api.capacity: 'capacity' must be a number but was 'ten'",
              "sluice.policies.api.rate: 'rate' must look like 10/s, 100/1m, 1.5/s or 5/250ms but"
                  + " was '10 per second'",
              "sluice.policies.win.capacity: 'capacity' is for buckets; a fixed-window takes"
                  + " 'limit' and 'window'",
              "sluice.policies.bad.algorithm: unknown algorithm 'sliding-windows' (expected"
                  + " leaky-bucket, token-bucket, gcra, fixed-window or sliding-window)",
              "sluice.policies.both: has 'limits' and also algorithm; put every limit's settings"
                  + " under 'limits'",
              "sluice.rules[0].path: a path pattern starts with '/' but was 'api/**'",
              "sluice.rules[0].policy: no policy 'nope' under sluice.policies (there are [api,"
                  + " win, bad, both, w2])",
              "sluice.rules[0].key: must be ip, principal or header:NAME but was 'cookie:x'",
              "sluice.rules[0].cost: must be a positive number or header:NAME but was '-2'",
              "sluice.rules[1].queue: queue mode needs bucket limits (leaky bucket, token bucket,"
                  + " GCRA) but rule /w has w2");
        });
  }

  @Test
  void theCircuitBreaker_takesWhatIsSet_keepsTheRest_andNamesWhatIsWrong() {
    runner.withPropertyValues("sluice.store.circuit-breaker.consecutive-unavailable=5",
        "sluice.store.circuit-breaker.open-for=2s").run(context -> {
          var breaker = context.getBean(SluiceLimiters.class).settings.breaker;
          assertThat(breaker.consecutiveUnavailable()).isEqualTo(5);
          assertThat(breaker.openFor()).isEqualTo(Duration.ofSeconds(2));
          assertThat(breaker.failureRate()).isEqualTo(
              dev.sluice.CircuitBreakerSettings.defaults().failureRate());
        });
    runner.withPropertyValues("sluice.store.circuit-breaker.failure-rate=1.5",
        "sluice.store.circuit-breaker.minimum-calls=0").run(context -> {
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(((SluiceConfigurationException) root).problems()).containsExactly(
              "sluice.store.circuit-breaker.failure-rate: circuit breaker failureRate must be in"
                  + " (0, 1] but was 1.5",
              "sluice.store.circuit-breaker.minimum-calls: circuit breaker minimumCalls must be at"
                  + " least 1 but was 0");
        });
  }

  @Test
  void aCostFromAHeader_is1WhenTheHeaderIsAbsent_andRefusesAValueThatIsNoNumber() {
    java.util.List<String> problems = new java.util.ArrayList<>();
    SluiceSettings.CostSource rows = SluiceSettings.cost("sluice.rules[0].cost", "header:X-Rows", problems);
    assertThat(problems).isEmpty();
    assertThat(rows.of(null)).isEqualTo(1);
    assertThat(rows.of(" ")).isEqualTo(1);
    assertThat(rows.of("7.5")).isEqualTo(7.5);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> rows.of("lots"))
        .hasMessage("header X-Rows must hold a number but held 'lots'");
    assertThat(SluiceSettings.cost("c", "2", problems).of("ignored")).isEqualTo(2);
  }

  @Test
  void aMisspelledProperty_failsStartup_withSpringsBindingError() {
    runner.withPropertyValues("sluice.policies.api.algorithm=gcra", "sluice.policies.api.rte=1/s")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("rte");
        });
    runner.withPropertyValues("sluice.dry-rune=true").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("dry-rune");
    });
  }

  @Test
  void theFailureAnalyzer_printsEveryProblem() {
    SluiceConfigurationException e = new SluiceConfigurationException(java.util.List.of(
        "sluice.policies.api.rate: 'rate' must look like 10/s", "sluice.headers: must be ietf"));
    FailureAnalysis a = new SluiceFailureAnalyzer().analyze(new IllegalStateException(e), e);
    assertThat(a.getDescription()).contains("    sluice.policies.api.rate: 'rate' must look like 10/s\n"
        + "    sluice.headers: must be ietf");
    assertThat(a.getAction()).contains("sluice.*");
    assertThat(getClass().getResource("/META-INF/spring.factories")).isNotNull();
  }

  @Test
  void aSharedStoreThatCannotBeMade_failsStartup_sayingWhatIsMissing() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=postgres", "sluice.policies.a.algorithm=gcra",
            "sluice.policies.a.burst=1", "sluice.policies.a.rate=1/s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("sluice.store.type: postgres needs one DataSource bean"));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=redis", "sluice.policies.a.algorithm=gcra",
            "sluice.policies.a.burst=1", "sluice.policies.a.rate=1/s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("sluice.store.redis.uri: is missing"));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=etcd")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("sluice.store.type: must be auto, memory, redis, postgres or mysql but was 'etcd'"));
  }

  @Test
  void aLimitIsCheckedAgainstTheChosenStoresClock() {
    // drains in half a microsecond: fine for the in-memory store's nanoseconds, not for Redis's µs
    String[] fast = {"sluice.policies.fast.algorithm=leaky-bucket",
        "sluice.policies.fast.capacity=1", "sluice.policies.fast.rate=2000000/s"};
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=memory").withPropertyValues(fast)
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(SluiceLimiters.class));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.redis.uri=" + TestStores.redisUri()).withPropertyValues(fast)
        .run(context -> {
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(((SluiceConfigurationException) root).problems()).singleElement()
              .asString().startsWith("sluice.policies.fast: ");
        });
  }

  @Configuration(proxyBeanMethods = false)
  static class WithLettuceClient {
    @Bean(destroyMethod = "shutdown")
    io.lettuce.core.RedisClient redisClient() {
      return io.lettuce.core.RedisClient.create(TestStores.redisUri());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class WithLettuceClientWithoutUri {
    @Bean(destroyMethod = "shutdown")
    io.lettuce.core.RedisClient redisClient() {
      return io.lettuce.core.RedisClient.create();
    }
  }

  @Test
  void anApplicationsLettuceClient_isTheRedisStore() {
    String[] policy = {"sluice.policies.a.algorithm=leaky-bucket", "sluice.policies.a.capacity=2",
        "sluice.policies.a.rate=1/1h", "sluice.store.redis.prefix=client-" + java.util.UUID.randomUUID() + ":"};
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withUserConfiguration(WithLettuceClient.class).withPropertyValues(policy)
        .run(context -> {
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          assertThat(limiters.storeName()).isEqualTo("redis");
          assertThat(limiters.get("a").tryAcquire("k").isAllowed()).isTrue();
          assertThat(limiters.get("a").tryAcquire("k").isAllowed()).isTrue();
          assertThat(limiters.get("a").tryAcquire("k").isAllowed()).isFalse();
          assertThat(limiters.get("a").tryAcquire("k").isDegraded()).isFalse();
        });
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withUserConfiguration(WithLettuceClientWithoutUri.class).withPropertyValues(policy)
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("sluice.store.redis.uri: is missing, and the application's"
                + " Lettuce RedisClient has no URI"));
  }

  @Configuration(proxyBeanMethods = false)
  static class BadAnnotations {
    @Bean
    Service service() {
      return new Service();
    }
  }

  static class Service {
    @RateLimited(policy = "missing", key = "#user.(", maxWait = "soon")
    public String call(String user) {
      return user;
    }
  }

  @Test
  void aWrongRateLimitedAnnotation_failsStartup_namingTheMethod() {
    runner.withUserConfiguration(BadAnnotations.class)
        .withPropertyValues("sluice.policies.a.algorithm=gcra", "sluice.policies.a.burst=1",
            "sluice.policies.a.rate=1/s")
        .run(context -> {
          Throwable root = context.getStartupFailure();
          while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
            root = root.getCause();
          }
          assertThat(((SluiceConfigurationException) root).problems()).hasSize(3).allSatisfy(p ->
              assertThat(p).startsWith("@RateLimited on dev.sluice.spring.ConfigurationTest$Service.call: "));
          assertThat(root).hasMessageContaining("no policy 'missing'")
              .hasMessageContaining("key: not a SpEL expression: '#user.('")
              .hasMessageContaining("maxWait: must be a duration such as 250ms, 5s or 1m but was 'soon'");
        });
  }

  @Test
  void theServletFilterIsRegisteredOnlyWithRules_andNothingAtAllWhenDisabled() {
    WebApplicationContextRunner web = new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=memory", "sluice.policies.a.algorithm=gcra",
            "sluice.policies.a.burst=1", "sluice.policies.a.rate=1/s");
    web.run(context -> {
      assertThat(context).hasSingleBean(SluiceLimiters.class);
      assertThat(context).doesNotHaveBean(FilterRegistrationBean.class);
    });
    web.withPropertyValues("sluice.rules[0].path=/api/**", "sluice.rules[0].policy=a",
        "sluice.filter-order=7").run(context -> {
          FilterRegistrationBean<?> reg = context.getBean(FilterRegistrationBean.class);
          assertThat(reg.getOrder()).isEqualTo(7);
          assertThat(reg.getUrlPatterns()).containsExactly("/*");
        });
    web.withPropertyValues("sluice.enabled=false", "sluice.rules[0].path=/api/**",
        "sluice.rules[0].policy=a").run(context -> {
          assertThat(context).doesNotHaveBean(SluiceLimiters.class);
          assertThat(context).doesNotHaveBean(FilterRegistrationBean.class);
        });
  }

  @Test
  void ideMetadata_describesTheProperties_andHintsTheirValues() throws Exception {
    String metadata;
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(metadata).contains("\"name\": \"sluice.store.type\"", "\"name\": \"sluice.policies\"",
        "\"name\": \"sluice.rules\"", "\"name\": \"sluice.dry-run\"",
        "\"name\": \"sluice.store.redis.uri\"", "\"value\": \"sliding-window\"",
        "\"value\": \"header:X-Api-Key\"",
        "\"name\": \"sluice.concurrency.limits.values.adaptive\"", "\"value\": \"gradient\"",
        "\"name\": \"sluice.concurrency.rules[].per\"", "\"value\": \"sheddable\"",
        "\"name\": \"sluice.concurrency.limits.values.group.key\"");
  }
}

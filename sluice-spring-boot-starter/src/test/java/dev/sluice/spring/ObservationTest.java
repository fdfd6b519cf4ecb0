package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Each decision on the current observation (docs/spring.md, "Tracing"): a request's
 * http.server.requests observation carries the policy, the outcome and the deciding limit; the
 * key only when asked.
 */
class ObservationTest {
  /** The observations that ended, with their key values. */
  static final class Captured implements ObservationHandler<Observation.Context> {
    final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();

    @Override
    public void onStop(Observation.Context context) {
      stopped.add(context);
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
      return true;
    }
  }

  private static ConfigurableApplicationContext app(Captured captured, boolean keys) {
    return new SpringApplicationBuilder(TestApp.class).web(WebApplicationType.SERVLET)
        .initializers(c -> c.getBeanFactory().registerSingleton("captured", captured))
        .run("--server.port=0", "--sluice.store.type=memory",
            "--spring.autoconfigure.exclude="
                + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
            "--sluice.observation.include-keys=" + keys);
  }

  private static int hello(ConfigurableApplicationContext app, String key) throws Exception {
    int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + port + "/api/hello")).header("X-Api-Key", key).build(),
        HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private static Map<String, String> keyValues(Observation.Context c) {
    return c.getAllKeyValues().stream().collect(Collectors.toMap(KeyValue::getKey,
        KeyValue::getValue, (a, b) -> b));
  }

  /**
   * The requests' observations, once {@code n} have stopped: a request's observation stops after
   * its response is written, so the client may have its answer a moment before.
   */
  private static List<Map<String, String>> requests(Captured captured, int n) {
    long end = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
    while (true) {
      List<Map<String, String>> seen = captured.stopped.stream()
          .filter(c -> "http.server.requests".equals(c.getName()))
          .map(ObservationTest::keyValues).toList();
      if (seen.size() >= n || System.nanoTime() > end) {
        return seen;
      }
      Thread.onSpinWait();
    }
  }

  @Test
  void eachDecision_isOnTheRequestsObservation_withoutTheKey() throws Exception {
    Captured captured = new Captured();
    try (ConfigurableApplicationContext app = app(captured, false)) {
      for (int i = 0; i < 4; i++) {
        hello(app, "acme");
      }
      List<Map<String, String>> seen = requests(captured, 4);
      assertThat(seen).hasSize(4);
      assertThat(seen).allSatisfy(kv -> {
        assertThat(kv).containsEntry("sluice.policy", "api").containsEntry("sluice.limit", "api")
            .containsEntry("sluice.degraded", "false");
        assertThat(kv).as("no key unless asked").doesNotContainKey("sluice.key");
      });
      assertThat(seen).extracting(kv -> kv.get("sluice.outcome"))
          .containsExactly("allowed", "allowed", "allowed", "refused");
    }
  }

  @Test
  void theKey_whenAsked() throws Exception {
    Captured captured = new Captured();
    try (ConfigurableApplicationContext app = app(captured, true)) {
      hello(app, "acme");
      assertThat(requests(captured, 1)).singleElement()
          .satisfies(kv -> assertThat(kv).containsEntry("sluice.key", "x-api-key:acme"));
    }
  }

  /** docs/spring.md's block states the defaults. */
  @Test
  void theBlockOfSpringMd_isTheDefaults() throws Exception {
    var source = DocYaml.block("spring.md", "sluice:\n  observation:");
    new org.springframework.boot.test.context.runner.ApplicationContextRunner()
        .withConfiguration(org.springframework.boot.autoconfigure.AutoConfigurations.of(
            SluiceAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=memory")
        .withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(source))
        .run(context -> {
          SluiceProperties.ObservationSettings o = context.getBean(SluiceProperties.class)
              .getObservation();
          SluiceProperties.ObservationSettings defaults = new SluiceProperties.ObservationSettings();
          assertThat(o.isEnabled()).isEqualTo(defaults.isEnabled()).isTrue();
          assertThat(o.isIncludeKeys()).isEqualTo(defaults.isIncludeKeys()).isFalse();
        });
  }
}

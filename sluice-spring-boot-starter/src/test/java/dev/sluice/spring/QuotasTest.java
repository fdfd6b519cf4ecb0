package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.quota.Quota;
import dev.sluice.spring.app.TestApp;
import dev.sluice.testkit.DocCurl;
import dev.sluice.testkit.DocSnippets;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Quotas in the starter (docs/spring.md, "Quotas"): the limiters read a key's quota from the
 * store; Actuator's {@code sluicequotas} endpoint lists them, and sets and removes them when
 * {@code sluice.quotas.write-enabled}; across two applications on one Redis a quota set through
 * one's endpoint changes the next decision of the other.
 */
class QuotasTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final HttpClient http = HttpClient.newHttpClient();

  private static ConfigurableApplicationContext app(String prefix, boolean write,
      String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("--server.port=0",
        "--spring.autoconfigure.exclude="
            + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "--management.endpoints.web.exposure.include=health,sluicequotas,sluiceconsole",
        "--sluice.store.redis.uri=" + TestStores.redisUri(),
        "--sluice.store.redis.prefix=" + prefix,
        "--sluice.quotas.enabled=true", "--sluice.quotas.refresh=100ms",
        "--sluice.quotas.write-enabled=" + write));
    for (String m : more) {   // a later argument replaces one of these (not joins it)
      args.removeIf(a -> a.startsWith(m.substring(0, m.indexOf('=') + 1)));
      args.add(m);
    }
    // as arguments: they win over the test application's application.yml
    return new SpringApplicationBuilder(TestApp.class).web(WebApplicationType.SERVLET)
        .run(args.toArray(new String[0]));
  }

  private static int port(ConfigurableApplicationContext c) {
    return Integer.parseInt(c.getEnvironment().getProperty("local.server.port"));
  }

  private HttpResponse<String> send(ConfigurableApplicationContext c, String method, String path,
      String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port(c)
        + path)).header("Content-Type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private int hello(ConfigurableApplicationContext c, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port(c)
        + "/api/hello")).header("X-Api-Key", key).build(), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  @Test
  void aQuotaSetThroughOnesActuator_changesTheOthersNextDecision_onRedis() throws Exception {
    String prefix = "quotas-" + StarterContract.fresh() + ":";
    try (ConfigurableApplicationContext one = app(prefix, true);
        ConfigurableApplicationContext two = app(prefix, false)) {
      String key = "acme";   // the rule's key: header:X-Api-Key, the limiter's key x-api-key:acme
      for (int i = 0; i < 3; i++) {
        assertThat(hello(two, key)).as("request %d of the policy's 3", i + 1).isEqualTo(200);
      }
      assertThat(hello(two, key)).isEqualTo(429);

      HttpResponse<String> set = send(one, "POST", "/actuator/sluicequotas", "{\"policy\":"
          + "\"api\",\"key\":\"x-api-key:acme\",\"algorithm\":\"leaky-bucket\",\"capacity\":100,"
          + "\"rate\":\"100/s\",\"reason\":\"pro plan\",\"who\":\"ops\"}");
      assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
      long saved = System.nanoTime();
      int answer;
      do {
        answer = hello(two, key);
      } while (answer == 429 && System.nanoTime() - saved < Duration.ofSeconds(10).toNanos());
      long took = (System.nanoTime() - saved) / 1_000_000;
      assertThat(answer).as("the other application admits the key under its quota")
          .isEqualTo(200);
      System.out.printf("starter quota: set through one application's Actuator, admitted by the"
          + " other after %d ms (Redis, refresh 100 ms)%n", took);

      JsonNode listed = JSON.readTree(send(two, "GET", "/actuator/sluicequotas", null).body());
      assertThat(listed.get("writeEnabled").asBoolean()).isFalse();
      assertThat(listed.get("quotas")).hasSize(1);
      assertThat(listed.get("quotas").get(0).get("limits").get(0).get("rate").asText())
          .isEqualTo("100/1s");
      assertThat(listed.get("audit").get(0).get("who").asText()).isEqualTo("ops");
      HttpResponse<String> readOnly = send(two, "POST", "/actuator/sluicequotas",
          "{\"policy\":\"api\",\"key\":\"x\",\"concurrency\":2,\"who\":\"ops\"}");
      assertThat(readOnly.statusCode()).as("read by default").isEqualTo(403);
      assertThat(readOnly.body()).contains("sluice.quotas.write-enabled=true");

      HttpResponse<String> bad = send(one, "POST", "/actuator/sluicequotas", "{\"policy\":"
          + "\"nope\",\"key\":\"k\",\"algorithm\":\"leaky-bucket\",\"capacity\":0,"
          + "\"rate\":\"fast\",\"expiresAt\":\"friday\",\"who\":\"ops\"}");
      assertThat(bad.statusCode()).isEqualTo(400);
      assertThat(JSON.readTree(bad.body()).get("detail").asText())
          .startsWith("the quota was not set: ").contains("no policy 'nope'")
          .contains("'expiresAt' must be an instant").contains("limits[0]: ");

      HttpResponse<String> exports = send(one, "POST", "/actuator/sluicequotas", "{\"policy\":"
          + "\"exports\",\"key\":\"tenant:7\",\"concurrency\":3,\"who\":\"ops\"}");
      assertThat(exports.statusCode()).as(exports.body()).isEqualTo(200);
      SluiceLimiters limiters = two.getBean(SluiceLimiters.class);
      saved = System.nanoTime();
      while (limiters.concurrency("exports").limit("tenant:7") != 3
          && System.nanoTime() - saved < Duration.ofSeconds(10).toNanos()) {
        Thread.onSpinWait();
      }
      assertThat(limiters.concurrency("exports").limit("tenant:7"))
          .as("a fixed concurrency limit's key takes its quota").isEqualTo(3);
      assertThat(limiters.concurrency("exports").limit("tenant:8")).isEqualTo(1);

      HttpResponse<String> removed = send(one, "DELETE",
          "/actuator/sluicequotas?policy=api&key=x-api-key:acme&who=ops&reason=downgrade", null);
      assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
      assertThat(send(one, "DELETE", "/actuator/sluicequotas?policy=api&key=x-api-key:acme&who=ops", null)
          .statusCode()).isEqualTo(404);
      saved = System.nanoTime();
      do {
        answer = hello(two, key);
      } while (answer == 200 && System.nanoTime() - saved < Duration.ofSeconds(10).toNanos());
      assertThat(answer).as("back to the policy's limits, which the key spent").isEqualTo(429);
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class,
          SluiceEndpointsAutoConfiguration.class))
      .withPropertyValues("sluice.store.type=memory",
          "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=1",
          "sluice.policies.api.rate=1/1h");

  @Test
  void inMemory_aQuotaPut_decidesItsKey_andOffByDefault() {
    runner.run(context -> {
      assertThat(context.getBean(SluiceLimiters.class).quotas()).isEmpty();
      assertThat(context).doesNotHaveBean(SluiceQuotasEndpoint.class);
    });
    runner.withPropertyValues("sluice.quotas.enabled=true").run(context -> {
      SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
      limiters.quotaStore().orElseThrow().put(new Quota("api", "vip", false,
          List.of(dev.sluice.Limit.leakyBucket(5, dev.sluice.Rate.perHour(5))), 0, null, "plan"),
          "test");
      limiters.quotas().orElseThrow().refresh();
      int admitted = 0;
      for (int i = 0; i < 8; i++) {
        admitted += limiters.get("api").tryAcquire("vip").isAllowed() ? 1 : 0;
      }
      assertThat(admitted).as("the quota's 5, not the policy's 1").isEqualTo(5);
      assertThat(limiters.get("api").tryAcquire("other").isAllowed()).isTrue();
      assertThat(limiters.get("api").tryAcquire("other").isAllowed()).isFalse();
    });
  }

  @Test
  void badQuotaSettings_failStartup_namingTheProperty() {
    runner.withPropertyValues("sluice.quotas.enabled=true", "sluice.quotas.refresh=5ms")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause().hasMessageContaining(
              "sluice.quotas.refresh: must be from 10ms to 1h but was PT0.005S");
        });
    runner.withPropertyValues("sluice.quotas.write-enabled=true").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining(
          "sluice.quotas.write-enabled: needs sluice.quotas.enabled=true");
    });
  }

  /** docs/spring.md's quotas block turns quotas on as it says. */
  @Test
  void theQuotasBlockOfSpringMd_turnsQuotasOn() throws Exception {
    var source = DocYaml.block("spring.md", "sluice:\n  quotas:");
    runner.withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(source))
        .run(context -> {
          assertThat(context).hasNotFailed();
          SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
          assertThat(limiters.quotas()).isPresent();
          assertThat(context.getBean(SluiceProperties.class).getQuotas().getRefresh())
              .isEqualTo(Duration.ofMillis(500));
          assertThat(context.getBean(SluiceProperties.class).getQuotas().isWriteEnabled())
              .isFalse();
        });
  }

  /**
   * The console under Actuator ({@code sluice.console.enabled}): the service's page, told to read
   * {@code /actuator/sluiceconsole} and to set quotas through {@code sluicequotas} with the
   * application's own security; its document counts each policy's decisions (from the meters) and
   * the keys it refused; the page's quota form's request sets a quota; off unless exposed.
   */
  @Test
  void theConsole_underActuator_pageDocumentAndQuotaForm() throws Exception {
    String prefix = "console-" + StarterContract.fresh() + ":";
    try (ConfigurableApplicationContext app = app(prefix, true, "--sluice.console.enabled=true",
        "--spring.application.name=shop")) {
      for (int i = 0; i < 6; i++) {
        hello(app, "flood");
      }
      hello(app, "quiet");
      HttpResponse<String> page = send(app, "GET", "/actuator/sluiceconsole/index.html", null);
      assertThat(page.statusCode()).isEqualTo(200);
      assertThat(page.headers().firstValue("Content-Type").orElse(""))
          .startsWith("text/html");
      assertThat(page.body()).contains("data-data=\"../sluiceconsole\" data-quotas="
          + "\"../sluicequotas\" data-auth=\"server\" data-quota-api=\"flat\"")
          .contains("<meta http-equiv=\"Content-Security-Policy\"");
      HttpResponse<String> js = send(app, "GET", "/actuator/sluiceconsole/console.js", null);
      assertThat(js.statusCode()).isEqualTo(200);
      assertThat(js.headers().firstValue("Content-Type").orElse(""))
          .startsWith("text/javascript");
      assertThat(send(app, "GET", "/actuator/sluiceconsole/evil.js", null).statusCode())
          .isEqualTo(404);

      JsonNode d = JSON.readTree(send(app, "GET", "/actuator/sluiceconsole", null).body());
      assertThat(d.get("instance").asText()).isEqualTo("shop:" + port(app));
      JsonNode api = null;
      for (JsonNode p : d.get("policies")) {
        if (p.get("name").asText().equals("api")) {
          api = p;
        }
      }
      assertThat(api).isNotNull();
      assertThat(api.get("allowed").asLong()).as("3 of flood, 1 of quiet").isEqualTo(4);
      assertThat(api.get("rejected").asLong()).isEqualTo(3);
      assertThat(api.get("topRefused").get(0).get("key").asText()).isEqualTo("x-api-key:flood");
      assertThat(d.get("limits").get(0).get("name").asText()).isEqualTo("exports");
      assertThat(d.get("quotasOn").asBoolean()).isTrue();

      // the request the page's form sends (flat, POST), as console.js builds it
      HttpResponse<String> form = send(app, "POST", "/actuator/sluicequotas", "{\"policy\":"
          + "\"api\",\"key\":\"x-api-key:flood\",\"prefix\":false,\"reason\":\"\",\"who\":"
          + "\"ops\",\"algorithm\":\"leaky-bucket\",\"capacity\":\"50\",\"rate\":\"50/s\"}");
      assertThat(form.statusCode()).as(form.body()).isEqualTo(200);
      assertThat(hello(app, "flood")).as("the quota decides the key now").isEqualTo(200);
      JsonNode after = JSON.readTree(send(app, "GET", "/actuator/sluiceconsole", null).body());
      assertThat(after.get("quotas")).hasSize(1);
      assertThat(after.get("audit").get(0).get("who").asText()).isEqualTo("ops");
    }
    try (ConfigurableApplicationContext hidden = app(prefix, false,
        "--sluice.console.enabled=true", "--management.endpoints.web.exposure.include=health")) {
      assertThat(send(hidden, "GET", "/actuator/sluiceconsole/index.html", null).statusCode())
          .as("not exposed").isEqualTo(404);
      assertThat(send(hidden, "GET", "/actuator/sluiceconsole", null).statusCode())
          .isEqualTo(404);
    }
  }

  /** docs/spring.md's console block serves the console and the quotas under Actuator. */
  @Test
  void theCurlCallsOfSpringMd_setListAndRemoveQuotas_asThePageShows() throws Exception {
    List<DocSnippets.Snippet> calls = DocSnippets.blocks(Path.of("../docs/spring.md"), "sh")
        .stream().filter(b -> b.code().startsWith("curl ")).toList();
    assertThat(calls).hasSize(1);
    try (ConfigurableApplicationContext c = app("doc-curl", true, "--sluice.store.type=memory")) {
      assertThat(DocCurl.run(calls.get(0), http, URI.create("http://127.0.0.1:" + port(c)),
          Map.of())).isEqualTo(4);
      JsonNode quotas = JSON.readTree(send(c, "GET", "/actuator/sluicequotas", null).body())
          .get("quotas");
      assertThat(quotas.toString()).as("the last call removed the api quota")
          .doesNotContain("x-api-key:acme").contains("tenant:7");
    }
  }

  @Test
  void theConsoleBlockOfSpringMd_servesTheConsole() throws Exception {
    var source = DocYaml.block("spring.md", "sluice:\n  console:");
    runner.withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(source))
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context).hasSingleBean(SluiceConsoleEndpoint.class);
          assertThat(context).hasSingleBean(SluiceQuotasEndpoint.class);
          assertThat(context.getBean(SluiceLimiters.class).refused).containsKey("api");
        });
  }
}

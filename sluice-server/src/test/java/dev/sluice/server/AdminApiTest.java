package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin API over real HTTP (docs/server.md, "Who is refused"): off without an admin token;
 * with one, {@code GET /v1/top-refused} names the keys refused most by a policy or a concurrency
 * limit, behind its own token, with bad requests named.
 */
class AdminApiTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TOKEN = "decide-0123456789abcdef";
  private static final String ADMIN = "admin-0123456789abcdef";
  private final HttpClient http = HttpClient.newHttpClient();
  private SluiceServer server;

  @TempDir
  Path dir;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void start(String adminToken) throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 2, rate: 1/1h}
        concurrency:
          db: {limit: 1}
        """);
    server = SluiceServer.start(new Options().port(0).config(file).token(TOKEN)
        .adminToken(adminToken));
  }

  private HttpResponse<String> send(String method, String path, String body, String token)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
        + path)).method(method, body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(body));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private void check(String key, int times) throws Exception {
    for (int i = 0; i < times; i++) {
      send("POST", "/v1/check", "{\"policy\":\"api\",\"key\":\"" + key + "\"}", TOKEN);
    }
  }

  @Test
  void theKeysRefusedMost_byPolicyAndByLimit_behindTheAdminToken() throws Exception {
    start(ADMIN);
    check("flood", 30);      // 2 allowed, 28 refused
    check("noisy", 5);       // 3 refused
    check("quiet", 1);       // allowed
    send("POST", "/v1/check", "{\"policy\":\"api\",\"key\":\"quiet\",\"mode\":\"peek\"}", TOKEN);
    HttpResponse<String> r = send("GET", "/v1/top-refused?policy=api&n=5", null, ADMIN);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode top = JSON.readTree(r.body());
    assertThat(top.get("policy").asText()).isEqualTo("api");
    assertThat(top.get("memorySeconds").asInt()).isEqualTo(300);
    assertThat(top.get("top")).hasSize(2);
    assertThat(top.get("top").get(0).get("key").asText()).isEqualTo("flood");
    assertThat(top.get("top").get(0).get("count").asDouble()).isBetween(27.9, 28.0);
    assertThat(top.get("top").get(1).get("key").asText()).isEqualTo("noisy");
    assertThat(top.get("total").asDouble()).isBetween(30.9, 31.0);

    send("POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}", TOKEN);
    send("POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}", TOKEN);   // refused
    JsonNode permits = JSON.readTree(send("GET", "/v1/top-refused?limit=db", null, ADMIN).body());
    assertThat(permits.get("limit").asText()).isEqualTo("db");
    assertThat(permits.get("top").get(0).get("key").asText()).isEqualTo("orders");
    assertThat(JSON.readTree(send("GET", "/v1/top-refused?limit=other", null, ADMIN).body())
        .get("top")).as("nothing refused there yet").isEmpty();

    assertThat(send("GET", "/v1/top-refused?policy=api", null, TOKEN).statusCode())
        .as("the decision token does not open it").isEqualTo(401);
    assertThat(send("GET", "/v1/top-refused?policy=api", null, null).statusCode()).isEqualTo(401);
    assertThat(send("POST", "/v1/top-refused?policy=api", "{}", ADMIN).statusCode())
        .isEqualTo(405);
    HttpResponse<String> both = send("GET", "/v1/top-refused?policy=api&limit=db", null, ADMIN);
    assertThat(both.statusCode()).isEqualTo(400);
    assertThat(both.body()).contains("name one policy (?policy=NAME) or one concurrency limit");
    HttpResponse<String> badN = send("GET", "/v1/top-refused?policy=api&n=1000", null, ADMIN);
    assertThat(badN.statusCode()).isEqualTo(400);
    assertThat(badN.body()).contains("n must be a whole number from 1 to 256 but was '1000'");
  }

  @Test
  void withoutAnAdminToken_theAdminApiIsOff() throws Exception {
    start(null);
    HttpResponse<String> r = send("GET", "/v1/top-refused?policy=api", null, TOKEN);
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(r.body()).contains("no admin API: start the service with --admin-token-file");
  }

  @Test
  void badAdminTokens_areRefusedAtStart() {
    assertThatThrownBy(() -> new Options().adminToken("short"))
        .hasMessage("an admin token must have at least 16 characters");
    assertThatThrownBy(() -> SluiceServer.start(new Options().port(0).token(TOKEN)
        .adminToken(TOKEN))).hasMessageContaining("the admin token must differ from the"
        + " decision token");
  }

  /**
   * Quotas over the admin API, in memory: a key's quota replaces its policy's limits for the next
   * decision, is listed and audited, and goes back to the policy's when removed; a concurrency
   * quota lets a key hold more; bad quotas are named, every problem at once, nothing set.
   */
  @Test
  void quotas_setListAuditRemove_andBadOnesNamed() throws Exception {
    start(ADMIN);
    String vip = "{\"policy\":\"api\",\"key\":\"vip\"}";
    HttpResponse<String> set = send("PUT", "/v1/quotas", "{\"policy\":\"api\",\"key\":\"vip\","
        + "\"limits\":[{\"algorithm\":\"leaky-bucket\",\"capacity\":5,\"rate\":\"5/1h\"}],"
        + "\"expiresAt\":\"2030-01-01T00:00:00Z\",\"reason\":\"pro plan\",\"who\":\"alice\"}",
        ADMIN);
    assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
    assertThat(JSON.readTree(set.body()).get("version").asLong()).isEqualTo(1);
    int admitted = 0;
    for (int i = 0; i < 8; i++) {
      admitted += send("POST", "/v1/check", vip, TOKEN).statusCode() == 200 ? 1 : 0;
    }
    assertThat(admitted).as("the quota's 5, not the policy's 2").isEqualTo(5);
    JsonNode list = JSON.readTree(send("GET", "/v1/quotas", null, ADMIN).body());
    assertThat(list.get("quotas")).hasSize(1);
    assertThat(list.get("quotas").get(0).get("key").asText()).isEqualTo("vip");
    assertThat(list.get("quotas").get(0).get("expiresAt").asText())
        .isEqualTo("2030-01-01T00:00:00Z");
    JsonNode listed = list.get("quotas").get(0).get("limits").get(0);
    assertThat(listed.toString()).as("in the fields a quota is set with").isEqualTo(
        "{\"algorithm\":\"leaky-bucket\",\"capacity\":5.0,\"rate\":\"5/1h\",\"name\":\"api\"}");
    HttpResponse<String> again = send("PUT", "/v1/quotas", "{\"policy\":\"api\",\"key\":\"vip\","
        + "\"limits\":[" + listed + "],\"expiresAt\":\"2030-01-01T00:00:00Z\","
        + "\"reason\":\"pro plan\",\"who\":\"alice\"}", ADMIN);
    assertThat(again.statusCode()).as("a listed quota can be set again: " + again.body())
        .isEqualTo(200);
    assertThat(JSON.readTree(again.body()).get("quota").get("limits").get(0)).isEqualTo(listed);
    HttpResponse<String> removed = send("DELETE", "/v1/quotas?policy=api&key=vip&who=bob"
        + "&reason=plan%20ended", null, ADMIN);
    assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
    assertThat(send("DELETE", "/v1/quotas?policy=api&key=vip&who=bob", null, ADMIN)
        .statusCode()).as("removed already").isEqualTo(404);
    admitted = 0;
    for (int i = 0; i < 4; i++) {
      admitted += send("POST", "/v1/check", vip, TOKEN).statusCode() == 200 ? 1 : 0;
    }
    assertThat(admitted).as("back to the policy's 2 (its own bucket)").isEqualTo(2);
    JsonNode audit = JSON.readTree(send("GET", "/v1/quotas/audit?n=5", null, ADMIN).body());
    assertThat(audit.get("changes")).hasSize(3);
    assertThat(audit.get("changes").get(0).get("who").asText()).isEqualTo("bob");
    assertThat(audit.get("changes").get(0).get("reason").asText()).isEqualTo("plan ended");
    assertThat(audit.get("changes").get(0).has("after")).isFalse();
    assertThat(audit.get("changes").get(1).get("who").asText()).isEqualTo("alice");
    assertThat(audit.get("changes").get(2).get("before")).as("the first had none").isNull();
    assertThat(audit.get("changes").get(1).get("after").get("reason").asText())
        .isEqualTo("pro plan");

    assertThat(send("PUT", "/v1/quotas", "{\"policy\":\"db\",\"key\":\"orders\","
        + "\"concurrency\":2,\"who\":\"ops\"}", ADMIN).statusCode()).isEqualTo(200);
    for (int i = 0; i < 2; i++) {
      assertThat(send("POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}", TOKEN)
          .statusCode()).as("permit %d of the quota's 2", i + 1).isEqualTo(200);
    }

    HttpResponse<String> bad = send("PUT", "/v1/quotas", "{\"policy\":\"nope\",\"key\":\"k\","
        + "\"limits\":[{\"algorithm\":\"leaky-bucket\",\"capacity\":0,\"rate\":\"fast\","
        + "\"color\":\"red\"}],\"expiresAt\":\"friday\",\"who\":\"x\",\"extra\":1}", ADMIN);
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(bad.body()).get("detail").asText()).startsWith("the quota was not"
        + " set: ").contains("unknown field 'extra'").contains("'expiresAt' must be an instant")
        .contains("limits[0]: unknown field 'color'").contains("no policy 'nope'")
        .contains("limits[0]:");
    HttpResponse<String> both = send("PUT", "/v1/quotas", "{\"policy\":\"db\",\"key\":\"k\","
        + "\"concurrency\":2,\"limits\":[],\"who\":\"x\"}", ADMIN);
    assertThat(both.body()).contains("a quota has 'limits'");
    assertThat(JSON.readTree(send("GET", "/v1/quotas", null, ADMIN).body()).get("quotas"))
        .as("nothing half-applied").hasSize(1);
    assertThat(send("GET", "/v1/quotas", null, TOKEN).statusCode()).isEqualTo(401);
  }

  /**
   * The console over HTTP: its page and assets are open (they hold no data) with a policy that
   * keeps them to themselves; its data, {@code GET /v1/console}, needs the admin token; without
   * an admin token there is no console.
   */
  @Test
  void theConsole_pageOpen_dataBehindTheAdminToken() throws Exception {
    start(ADMIN);
    check("flood", 5);
    send("POST", "/v1/permits", "{\"limit\":\"db\",\"key\":\"orders\"}", TOKEN);
    HttpResponse<String> moved = send("GET", "/console", null, null);
    assertThat(moved.statusCode()).as("the page's assets are relative to /console/")
        .isEqualTo(302);
    assertThat(moved.headers().firstValue("Location")).hasValue("/console/");
    HttpResponse<String> page = send("GET", "/console/", null, null);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
    assertThat(page.headers().firstValue("Content-Security-Policy"))
        .hasValue(dev.sluice.console.ConsoleAssets.CONTENT_SECURITY_POLICY);
    assertThat(page.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
    assertThat(page.body()).contains("<script src=\"console.js\" defer></script>")
        .contains("data-data=\"../v1/console\" data-quotas=\"../v1/quotas\" data-auth=\"token\"")
        .doesNotContain("http://", "https://").as("no CDN: every asset from the jar");
    assertThat(send("GET", "/console/console.js", null, null).headers()
        .firstValue("Content-Type")).hasValue("text/javascript; charset=utf-8");
    assertThat(send("GET", "/console/console.css", null, null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/console/favicon.svg", null, null).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/console/other.js", null, null).statusCode()).isEqualTo(404);
    assertThat(send("GET", "/console/index.html", null, null).statusCode())
        .as("the page is /console/ only").isEqualTo(404);
    assertThat(send("POST", "/console/", "x", null).statusCode()).isEqualTo(405);

    assertThat(send("GET", "/v1/console", null, null).statusCode()).isEqualTo(401);
    assertThat(send("GET", "/v1/console", null, TOKEN).statusCode()).isEqualTo(401);
    assertThat(send("DELETE", "/v1/console", null, ADMIN).statusCode()).isEqualTo(405);
    HttpResponse<String> data = send("GET", "/v1/console", null, ADMIN);
    assertThat(data.statusCode()).isEqualTo(200);
    JsonNode d = JSON.readTree(data.body());
    assertThat(d.get("instance").asText()).isEqualTo("127.0.0.1:" + server.port());
    JsonNode api = d.get("policies").get(0);
    assertThat(api.get("name").asText()).isEqualTo("api");
    assertThat(api.get("allowed").asLong()).isEqualTo(2);
    assertThat(api.get("rejected").asLong()).isEqualTo(3);
    assertThat(api.get("topRefused").get(0).get("key").asText()).isEqualTo("flood");
    assertThat(api.get("leased").asBoolean()).isFalse();
    assertThat(api.get("allowedPerSecond").size()).as("a series ends at the last sample time")
        .isLessThanOrEqualTo(d.get("times").size());
    assertThat(d.get("quotasOn").asBoolean()).isTrue();
    JsonNode db = d.get("limits").get(0);
    assertThat(db.get("name").asText()).isEqualTo("db");
    assertThat(db.get("inFlight").asLong()).isEqualTo(1);
    assertThat(db.get("keys").get(0).get("key").asText()).isEqualTo("orders");
    assertThat(db.get("keys").get(0).get("limit").asInt()).isEqualTo(1);
    assertThat(db.get("keys").get(0).get("adaptive").asBoolean()).isFalse();
    assertThat(d.get("quotas")).isEmpty();
    assertThat(d.get("audit")).isEmpty();

    server.close();
    start(null);
    HttpResponse<String> off = send("GET", "/console", null, null);
    assertThat(off.statusCode()).isEqualTo(404);
    assertThat(off.body()).contains("no console: start the service with --admin-token-file");
    assertThat(send("GET", "/v1/console", null, TOKEN).statusCode()).isEqualTo(404);
  }
}

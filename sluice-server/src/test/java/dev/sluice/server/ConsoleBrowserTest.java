package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.LeaseSettings;
import dev.sluice.testkit.Browser;
import dev.sluice.testkit.Ports;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;
import redis.embedded.RedisServer;

/**
 * The console in a real browser (headless Chromium through chromedriver, the test kit's {@link Browser}),
 * against two real service instances sharing a real Redis ({@code SLUICE_REDIS_URI} names an
 * external one): a quota made in the console on one instance changes the next decision on the
 * other; the keys refused most show the flooding key, keys are shown as text whatever they hold;
 * a wrong token is said; and the page logs no error to the browser's console.
 *
 * <p>{@code -Dsluice.console.screenshot=docs/console.png} saves the screenshot in the docs.
 */
class ConsoleBrowserTest {
  private static final String TOKEN = "decide-0123456789abcdef";
  private static final String ADMIN = "admin-0123456789abcdef";
  /** A key chosen by an attacker: markup that would run if the page wrote keys as HTML. */
  private static final String HOSTILE = "<img src=x onerror=\"window.pwned=1\">";
  private static RedisServer redis;
  private static String redisUri;

  private final HttpClient http = HttpClient.newHttpClient();
  /** Each test's keys are its own: the store (and its buckets, permits) outlives a test. */
  private final String run = Long.toString(System.nanoTime() % 1_000_000_000L, 36);
  private SluiceServer one;
  private SluiceServer two;
  private Browser browser;

  @TempDir
  Path dir;

  @BeforeAll
  static void redis() throws Exception {
    redisUri = System.getenv("SLUICE_REDIS_URI");
    if (redisUri == null) {
      int port = Ports.free();
      redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
          .setting("save \"\"").setting("appendonly no").build();
      redis.start();
      redisUri = "redis://127.0.0.1:" + port;
    }
  }

  @AfterAll
  static void stopRedis() throws Exception {
    if (redis != null) {
      redis.stop();
    }
  }

  @BeforeEach
  void start() throws Exception {
    browser = Browser.open();
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, """
        policies:
          api: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}
          search: {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}
        concurrency:
          exports: {limit: 2, lease: 1h}
          db: {adaptive: gradient, minLimit: 2, maxLimit: 50}
        """);
    one = SluiceServer.start(options(file));
    two = SluiceServer.start(options(file));
  }

  private static Options options(Path file) {
    return new Options().port(0).config(file).token(TOKEN).adminToken(ADMIN).redis(redisUri)
        .leases(LeaseSettings.defaults().withExcessShare(0.1));
  }

  @AfterEach
  void stop() throws Exception {
    try {
      if (browser != null) {
        browser.close();
      }
    } finally {
      if (one != null) {
        one.close();
      }
      if (two != null) {
        two.close();
      }
    }
  }

  private HttpResponse<String> send(SluiceServer s, String method, String path, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
        .header("Authorization", "Bearer " + TOKEN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private int check(SluiceServer s, String policy, String key) throws Exception {
    String body = "{\"policy\":" + json(policy) + ",\"key\":" + json(key) + "}";
    return send(s, "POST", "/v1/check", body).statusCode();
  }

  private static String json(String s) {
    return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
  }

  /**
   * A wait that looks again when what it read was re-rendered under it (the console redraws its
   * tables live).
   */
  private WebDriverWait waiting() {
    WebDriverWait wait =
        new WebDriverWait(browser.driver, Duration.ofSeconds(20), Duration.ofMillis(50));
    wait.ignoring(StaleElementReferenceException.class);
    return wait;
  }

  /**
   * The text of every element {@code css} selects, read in one script, so at one instant of the
   * page: the console redraws its tables live, and an element found in one call and read in
   * the next may be gone by then (a busy host made that happen).
   */
  private List<String> texts(String css) {
    Object texts = browser.driver.executeScript("return Array.from("
        + "document.querySelectorAll(arguments[0]), e => e.innerText.trim())", css);
    return ((List<?>) texts).stream().map(String::valueOf).toList();
  }

  /** The text of the first element {@code css} selects, read as {@link #texts} reads. */
  private String text(String css) {
    List<String> all = texts(css);
    assertThat(all).as("elements selected by %s", css).isNotEmpty();
    return all.get(0);
  }

  /** Opens the console of {@code s}, gives it the admin token and waits until it is live. */
  private void connect(SluiceServer s, String token) {
    browser.driver.get("http://127.0.0.1:" + s.port() + "/console");
    WebElement field = browser.driver.findElement(By.id("token"));
    field.clear();
    field.sendKeys(token);
    browser.driver.findElement(By.id("connect")).click();
  }

  private String status() {
    return browser.driver.findElement(By.id("status")).getText();
  }

  private void type(String id, String text) {
    WebElement e = browser.driver.findElement(By.id(id));
    e.clear();
    e.sendKeys(text);
  }

  @Test
  void aQuotaMadeInTheConsole_changesTheNextDecisionOnTheOtherInstance() throws Exception {
    String key = "customer:acme-" + run;
    assertThat(check(two, "api", key)).isEqualTo(200);
    assertThat(check(two, "api", key)).as("capacity 1: the policy refuses the second")
        .isEqualTo(429);

    connect(one, ADMIN);
    waiting().until(d -> status().equals("live"));
    new Select(browser.driver.findElement(By.id("q-policy"))).selectByValue("rate:api");
    type("q-key", key);
    type("q-capacity", "100");
    type("q-rate", "100/s");
    type("q-reason", "pro plan");
    type("q-who", "ops@example.com");
    browser.driver.findElement(By.id("q-save")).click();
    waiting().until(d -> d.findElement(By.id("quota-message")).getText().startsWith("Saved"));
    long saved = System.nanoTime();
    long deadline = saved + Duration.ofSeconds(10).toNanos();
    int answer;
    do {
      answer = check(two, "api", key);
    } while (answer == 429 && System.nanoTime() < deadline);
    long tookMillis = (System.nanoTime() - saved) / 1_000_000;
    assertThat(answer).as("the other instance admits the key under its quota").isEqualTo(200);
    System.out.printf("console quota: set on one instance, admitted by the other after %d ms"
        + " (Redis)%n", tookMillis);

    String row = "#quotas tr[data-key='" + key + "']";
    waiting().until(d -> !texts(row).isEmpty());
    assertThat(text(row)).contains("api", key, "leaky-bucket 100/1s", "pro plan");
    waiting().until(d -> text("#audit").contains("ops@example.com"));
    assertThat(text("#audit")).contains("(none)", "pro plan");

    // an invalid quota is named, and nothing is set
    type("q-key", "customer:bad");
    type("q-rate", "fast");
    browser.driver.findElement(By.id("q-save")).click();
    waiting().until(d -> d.findElement(By.id("quota-message")).getText().contains("the quota"
        + " was not set"));
    assertThat(browser.driver.findElement(By.id("quota-message")).getText()).contains("'fast'");
    assertThat(browser.errors()).as("the browser logs the refused call, and nothing else")
        .singleElement().asString().contains("/v1/quotas", "400");
    assertThat(send(one, "GET", "/v1/check", null).statusCode()).isEqualTo(405);

    // removed in the console: the other instance goes back to the policy, which is spent
    waiting().until(d -> {   // clicked once: a redrawn row is found again, not clicked twice
      d.findElement(By.cssSelector("#quotas tr[data-key='" + key + "'] .remove")).click();
      return true;
    });
    waiting().until(d -> d.findElement(By.id("quota-message")).getText().startsWith("Removed"));
    deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    do {
      answer = check(two, "api", key);
    } while (answer == 200 && System.nanoTime() < deadline);
    assertThat(answer).isEqualTo(429);
    waiting().until(d -> d.findElement(By.id("audit")).getText().contains("(removed)"));
    assertThat(browser.errors()).as("the page's console").isEmpty();
  }

  @Test
  void theKeysRefusedMost_showTheFloodingKey_asText_andTheLimitsLive() throws Exception {
    String flooder = "flooder-" + run;
    String tenant = "tenant:" + run;
    for (int i = 0; i < 40; i++) {
      check(one, "api", flooder);
    }
    for (int i = 0; i < 6; i++) {
      check(one, "api", HOSTILE + run);
      check(one, "api", "customer:" + i + "-" + run);
      check(one, "api", "customer:" + i + "-" + run);
    }
    for (int i = 0; i < 300; i++) {
      check(one, "search", "k" + (i % 7));
    }
    HttpResponse<String> permit = send(one, "POST", "/v1/permits",
        "{\"limit\":\"exports\",\"key\":\"" + tenant + "\"}");
    assertThat(permit.statusCode()).isEqualTo(200);
    send(one, "POST", "/v1/permits", "{\"limit\":\"exports\",\"key\":\"" + tenant + "\"}");
    assertThat(send(one, "POST", "/v1/permits", "{\"limit\":\"exports\",\"key\":\"" + tenant + "\"}")
        .statusCode()).as("limit 2").isEqualTo(429);

    connect(one, ADMIN);
    String firstRefused = "#top .top-list[data-policy='api'] tr td.key";
    waiting().until(d -> !texts(firstRefused).isEmpty());
    List<String> keys = texts(firstRefused);
    assertThat(keys.get(0)).as("the flooding key first").isEqualTo(flooder);
    assertThat(keys).contains(HOSTILE + run);
    assertThat(browser.driver.executeScript("return window.pwned === undefined"
        + " && document.querySelectorAll('#top img').length === 0")).as("the key is text")
        .isEqualTo(Boolean.TRUE);
    assertThat(text("#top .top-list[data-limit='exports'] td.key")).isEqualTo(tenant);

    assertThat(text(".limit[data-limit='exports'] .in-flight")).isEqualTo("2");
    assertThat(text(".limit[data-limit='exports'] tr[data-key='" + tenant + "'] .key-limit"))
        .isEqualTo("2");
    assertThat(text("#policies tr[data-policy='search']")).contains("300");
    waiting().until(d -> !texts("#leases tbody tr").isEmpty());
    assertThat(text("#leases")).contains("search");

    String shot = System.getProperty("sluice.console.screenshot");
    if (shot != null && !shot.isBlank()) {
      traffic(Duration.ofSeconds(20));   // a picture with some history: not part of the test
      Files.write(Path.of(shot), browser.driver.getScreenshotAs(OutputType.BYTES));
    }
    assertThat(browser.errors()).as("the page's console").isEmpty();
  }

  @Test
  void aWrongToken_isSaid_andTheDecisionTokenOpensNothing() throws Exception {
    connect(one, TOKEN);
    waiting().until(d -> status().equals("the admin token was refused"));
    assertThat(browser.driver.findElements(By.cssSelector("#policies tbody tr"))).isEmpty();
    assertThat(browser.errors()).as("only the refused call").hasSize(1).first().asString()
        .contains("401");
    connect(one, ADMIN);
    waiting().until(d -> status().equals("live"));
    assertThat(browser.driver.findElements(By.cssSelector("#policies tbody tr"))).hasSize(2);
  }

  /** Some traffic for the docs' screenshot: checks at a varying rate and a busy adaptive limit. */
  private void traffic(Duration length) throws Exception {
    long end = System.nanoTime() + length.toNanos();
    java.util.Random random = new java.util.Random(7);
    while (System.nanoTime() < end) {
      double phase = (end - System.nanoTime()) / (double) length.toNanos();
      for (int i = 0; i < 20 + (int) (40 * Math.sin(phase * Math.PI)); i++) {
        check(one, "search", "k" + random.nextInt(20));
        check(one, "api", random.nextInt(4) == 0 ? "bot-" + run : "customer:" + random.nextInt(9));
      }
      HttpResponse<String> p = send(one, "POST", "/v1/permits", "{\"limit\":\"db\",\"key\":"
          + "\"reports\"}");
      Thread.sleep(20 + random.nextInt(30));
      if (p.statusCode() == 200) {
        String id = new com.fasterxml.jackson.databind.ObjectMapper().readTree(p.body())
            .get("permit").asText();
        send(one, "DELETE", "/v1/permits/" + id, null);
      }
    }
  }
}

package dev.sluice.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.testkit.ManualClock;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The same filter in Apache Tomcat 10.1 (Servlet 6.0), over real HTTP: no Jetty-specific behaviour. */
class TomcatFilterTest {
  private final ManualClock clock = new ManualClock();
  private final HttpClient http = HttpClient.newHttpClient();
  private Tomcat tomcat;
  private String base;

  @TempDir
  Path dir;

  @AfterEach
  void stop() throws Exception {
    if (tomcat != null) {
      tomcat.stop();
      tomcat.destroy();
    }
  }

  private void start(SluiceFilter filter) throws Exception {
    tomcat = new Tomcat();
    tomcat.setBaseDir(dir.toString());
    Connector connector = new Connector();
    connector.setPort(0);
    connector.setProperty("address", "127.0.0.1");
    tomcat.setConnector(connector);
    Context context = tomcat.addContext("/app", dir.toString());
    Tomcat.addServlet(context, "ok", new HttpServlet() {
      @Override
      protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain");
        resp.getWriter().write("ok");
      }
    });
    context.addServletMappingDecoded("/*", "ok");
    FilterDef def = new FilterDef();
    def.setFilterName("sluice");
    def.setFilter(filter);
    context.addFilterDef(def);
    FilterMap map = new FilterMap();
    map.setFilterName("sluice");
    map.addURLPattern("/*");
    context.addFilterMap(map);
    tomcat.start();
    base = "http://127.0.0.1:" + connector.getLocalPort() + "/app";
  }

  private HttpResponse<String> get(String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void admitsThen429_withTheSameHeadersAndBodyAsInJetty() throws Exception {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(0.4)).named("api"))
        .clock(clock).scheduler(clock).build();
    start(SluiceFilter.builder()
        .rule(Rule.path("/api/**").limiter(l).key(Keys.header("X-Api-Key")).build()).build());

    HttpResponse<String> first = get("/api/items", "X-Api-Key", "k1");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.body()).isEqualTo("ok");
    assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=2;w=5");
    assertThat(first.headers().firstValue("RateLimit")).hasValue("\"api\";r=1;t=3");
    assertThat(first.headers().firstValue("Access-Control-Expose-Headers"))
        .hasValue("RateLimit, RateLimit-Policy, Retry-After");
    assertThat(get("/api/items", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
    HttpResponse<String> third = get("/api/items", "X-Api-Key", "k1");
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(third.headers().firstValue("Retry-After")).hasValue("3");
    assertThat(third.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    assertThat(third.body()).contains("\"status\":429").contains("retry after 3 s");
    assertThat(get("/api/items", "X-Api-Key", "k2").statusCode()).as("another key").isEqualTo(200);
    HttpResponse<String> noKey = get("/api/items");
    assertThat(noKey.statusCode()).isEqualTo(400);
    assertThat(noKey.body()).contains("Missing rate-limit key");
    assertThat(get("/elsewhere").statusCode()).as("no rule matches").isEqualTo(200);
    clock.advance(Duration.ofMillis(2500));
    assertThat(get("/api/items", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
  }

  @Test
  void legacyHeaders() throws Exception {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1)).named("one"))
        .clock(clock).scheduler(clock).build();
    start(SluiceFilter.builder().rule(Rule.path("/**").limiter(l).key(r -> "all").build())
        .headers(RateLimitHeaders.Mode.LEGACY).build());
    assertThat(get("/x").statusCode()).isEqualTo(200);
    HttpResponse<String> rejected = get("/x");
    assertThat(rejected.statusCode()).isEqualTo(429);
    assertThat(rejected.headers().firstValue("X-RateLimit-Limit")).hasValue("1");
    assertThat(rejected.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
    assertThat(rejected.headers().firstValue("RateLimit")).isEmpty();
    assertThat(rejected.headers().firstValue("Retry-After")).hasValue("1");
  }

  @Test
  void disguisedPaths_areHeldToTheRuleOfThePathTheyReach() throws Exception {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1)).named("api"))
        .clock(clock).scheduler(clock).build();
    start(SluiceFilter.builder().rule(Rule.path("/api/**").limiter(l).key(r -> "all").build()).build());
    assertThat(get("/api/items").statusCode()).isEqualTo(200);
    for (String disguise : new String[] {"/api/./items", "/x/../api/items", "/%61pi/items",
        "/api/%69tems", "/api;v=1/items", "//api/items"}) {
      int status = get(disguise).statusCode();
      assertThat(status).as(disguise + " must not pass the limit").isIn(400, 429);
    }
  }
}

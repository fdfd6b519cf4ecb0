package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import dev.sluice.testkit.Ports;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import redis.embedded.RedisServer;

/**
 * Redis stopped under {@code sluice.store.failure=fallback} (and {@code open}): the local
 * fallback limiter's refusals are rate-limit refusals, 429 with {@code Retry-After}, in the
 * servlet filter, the WebFlux filter and {@code @RateLimited}; the health stays UP and says the
 * store is down; once Redis is back, the store decides again.
 */
class RedisFallbackOutageTest {
  /** What every web stack answers while Redis is down under the fallback policy. */
  abstract static class Contract extends StarterContract {
    RedisServer redis() {
      return redis;
    }

    void restart() {
      redis = TestStores.startRedis(PORT);
    }

    @Override
    String expectedStore() {
      return "redis";
    }

    @Test
    void whileRedisIsDown_theFallbacksRefusalsAre429_andHealthStaysUp() throws Exception {
      String key = fresh();
      assertThat(get("/api/hello", "X-Api-Key", key).statusCode()).isEqualTo(200);
      redis().stop();
      try {
        String local = fresh();
        for (int i = 0; i < 3; i++) {
          assertThat(get("/api/hello", "X-Api-Key", local).statusCode())
              .as("the fallback's own bucket of 3 (request %s)", i + 1).isEqualTo(200);
        }
        HttpResponse<String> refused = get("/api/hello", "X-Api-Key", local);
        assertThat(refused.statusCode()).as("a rate limit refused it: 429, not 503")
            .isEqualTo(429);
        assertThat(header(refused, "Retry-After")).as("1 an hour leaks out").isEqualTo("3600");
        assertThat(refused.body()).contains("Too Many Requests").doesNotContain("unavailable");
        String user = fresh();
        for (int i = 0; i < 4; i++) {
          assertThat(get("/reports/" + user).statusCode()).isEqualTo(200);
        }
        HttpResponse<String> method = get("/reports/" + user);
        assertThat(method.statusCode()).as("@RateLimited under the fallback").isEqualTo(429);
        assertThat(header(method, "Retry-After")).isNotNull();
        HttpResponse<String> health = get("/actuator/health/sluice");
        assertThat(health.statusCode()).as("the failure policy keeps serving: UP")
            .isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"", "\"storeState\":\"down\"",
            "\"failurePolicy\":\"fallback\"", "\"storeError\"");
      } finally {
        restart();
      }
      long deadline = System.nanoTime() + 30_000_000_000L;
      String body;
      do {
        body = get("/actuator/health/sluice").body();
      } while (!body.contains("\"storeState\":\"up\"") && System.nanoTime() < deadline);
      assertThat(body).contains("\"storeState\":\"up\"");
    }
  }

  private static final int PORT = Ports.free();
  private static RedisServer redis = TestStores.startRedis(PORT);

  @AfterAll
  static void stop() throws Exception {
    redis.stop();
  }

  @DynamicPropertySource
  static void redisProperties(DynamicPropertyRegistry r) {
    r.add("sluice.store.redis.uri", () -> "redis://127.0.0.1:" + PORT);
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=servlet", "sluice.store.failure=fallback",
          "sluice.store.timeout=200ms", "spring.autoconfigure.exclude="
          + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
  class Mvc extends Contract {
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=reactive", "sluice.store.failure=fallback",
          "sluice.store.timeout=200ms", "spring.autoconfigure.exclude="
          + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
  class WebFlux extends Contract {
  }
}

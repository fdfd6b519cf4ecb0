package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * WebFlux on PostgreSQL with {@code sluice.store.failure=open}: when the database stops, limited
 * requests pass (without the RateLimit field, whose value is not known), decided on no event
 * loop, and the health stays UP (the failure policy keeps serving) with the store's state DOWN in
 * its details.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive", "sluice.store.failure=open",
        "sluice.store.timeout=200ms", "spring.datasource.hikari.connection-timeout=500",
        "spring.autoconfigure.exclude="
        + "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration,"
        + "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration,"
        + "org.springframework.boot.autoconfigure.data.redis.RedisRepositoriesAutoConfiguration"})
class PostgresOutageTest extends StarterContract {
  private static final EmbeddedPostgres PG = TestStores.startPostgres();

  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }

  @DynamicPropertySource
  static void postgres(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> PG.getJdbcUrl("postgres", "postgres"));
    r.add("spring.datasource.username", () -> "postgres");
  }

  @AfterAll
  static void stop() throws Exception {
    PG.close();
  }

  @Override
  String expectedStore() {
    return "postgres";
  }

  @Test
  void aStoppedDatabase_underFailOpen_letsRequestsThrough_andTheHealthStaysUp() throws Exception {
    String key = fresh();
    for (int i = 0; i < 3; i++) {
      assertThat(get("/api/hello", "X-Api-Key", key).statusCode()).isEqualTo(200);
    }
    assertThat(get("/api/hello", "X-Api-Key", key).statusCode()).isEqualTo(429);
    PG.close();
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> open = get("/api/hello", "X-Api-Key", key);
      assertThat(open.statusCode()).isEqualTo(200);
      assertThat(header(open, "RateLimit-Policy")).isEqualTo("\"api\";q=3;w=10800");
      assertThat(header(open, "RateLimit")).isNull();
    }
    HttpResponse<String> health = get("/actuator/health/sluice");
    assertThat(health.statusCode()).as("fail open keeps serving: the instance stays in rotation")
        .isEqualTo(200);
    assertThat(health.body()).contains("\"status\":\"UP\"", "\"storeState\":\"down\"",
        "\"failurePolicy\":\"open\"");
  }
}

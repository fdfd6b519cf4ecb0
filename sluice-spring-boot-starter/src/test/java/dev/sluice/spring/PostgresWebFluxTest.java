package dev.sluice.spring;

import org.junit.jupiter.api.BeforeAll;import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;
/**
 * WebFlux with PostgreSQL on the application's DataSource ({@code spring.datasource.url}): the
 * store type is left to {@code auto}; each run has a table of its own.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive",
    "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration,"
    + "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration,"
    + "org.springframework.boot.autoconfigure.data.redis.RedisRepositoriesAutoConfiguration"})
class PostgresWebFluxTest extends StarterContract {
  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }  @DynamicPropertySource
  static void postgres(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", TestStores::postgresUrl);
    r.add("spring.datasource.username", () -> "postgres");
    r.add("sluice.store.postgres.table", () -> "reactive_" + fresh().replace("-", "").substring(0, 12));
  }

  @Override
  String expectedStore() {
    return "postgres";
  }
}

package dev.sluice.spring;

import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Mvc with MariaDB on the application's DataSource ({@code spring.datasource.url}, a
 * {@code jdbc:mariadb:} URL), beside sluice-postgres on the class path: the store type is left
 * to {@code auto}, which picks the MySQL store by the URL; each run has a table of its own.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet",
    "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration,"
    + "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration,"
    + "org.springframework.boot.autoconfigure.data.redis.RedisRepositoriesAutoConfiguration"})
class MysqlMvcTest extends StarterContract {
  @DynamicPropertySource
  static void mysql(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", TestStores::mysqlUrl);
    r.add("spring.datasource.username", () -> "root");
    r.add("sluice.store.mysql.table", () -> "servlet_" + fresh().replace("-", "").substring(0, 12));
  }

  @Override
  String expectedStore() {
    return "mysql";
  }
}

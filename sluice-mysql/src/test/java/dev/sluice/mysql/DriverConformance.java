package dev.sluice.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;

/**
 * The whole conformance suite through a pool of its own on the test server, reached by the URL
 * a subclass names (another driver, other driver settings).
 */
abstract class DriverConformance extends ConformanceSuite {
  private static final Map<Class<?>, HikariDataSource> POOLS = new ConcurrentHashMap<>();

  /** The JDBC URL of this class's pool. */
  protected abstract String jdbcUrl();

  protected final HikariDataSource pool() {
    return POOLS.computeIfAbsent(getClass(), c -> TestMysql.pool(jdbcUrl(), 16));
  }

  @AfterAll
  static void closePools() {
    POOLS.values().forEach(HikariDataSource::close);
    POOLS.clear();
  }

  @Override
  protected LimiterFactory factory() {
    return new MysqlFactory(pool());
  }

  /** The test server's URL for MySQL Connector/J ({@code jdbc:mysql:}). */
  static String connectorJ() {
    String url = TestMysql.url();
    return url.startsWith("jdbc:mariadb:") ? "jdbc:mysql:" + url.substring("jdbc:mariadb:".length())
        : url;
  }

  /** {@code url} with {@code options} added to its query string. */
  static String withOptions(String url, String options) {
    return url + (url.contains("?") ? "&" : "?") + options;
  }
}

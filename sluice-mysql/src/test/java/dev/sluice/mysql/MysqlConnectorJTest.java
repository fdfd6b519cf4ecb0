package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;
import java.sql.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * MySQL's own driver works as MariaDB's does: the whole conformance suite through MySQL
 * Connector/J ({@code jdbc:mysql://}), on the same server.
 */
class MysqlConnectorJTest extends ConformanceSuite {
  private static HikariDataSource pool;

  private static synchronized HikariDataSource pool() {
    if (pool == null) {
      String url = TestMysql.url();
      pool = TestMysql.pool(url.startsWith("jdbc:mariadb:")
          ? "jdbc:mysql:" + url.substring("jdbc:mariadb:".length()) : url, 16);
    }
    return pool;
  }

  @AfterAll
  static void closePool() {
    if (pool != null) {
      pool.close();
      pool = null;
    }
  }

  @Override
  protected LimiterFactory factory() {
    return new MysqlFactory(pool());
  }

  @Test
  void theConnectionsAreConnectorJs() throws Exception {
    try (Connection c = pool().getConnection()) {
      assertThat(c.getMetaData().getDriverName()).startsWith("MySQL Connector/J");
    }
  }
}

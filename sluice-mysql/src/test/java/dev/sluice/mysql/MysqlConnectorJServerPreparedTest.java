package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;
import java.sql.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * MySQL Connector/J with the settings HikariCP recommends for it and {@code docs/operations.md}
 * gives ({@code useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSqlLimit=2048}): the
 * whole conformance suite, on the same server.
 */
class MysqlConnectorJServerPreparedTest extends ConformanceSuite {
  static final String OPTIONS =
      "useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSize=250&prepStmtCacheSqlLimit=2048";
  private static HikariDataSource pool;

  private static synchronized HikariDataSource pool() {
    if (pool == null) {
      String url = TestMysql.url();
      url = url.startsWith("jdbc:mariadb:") ? "jdbc:mysql:" + url.substring("jdbc:mariadb:".length())
          : url;
      pool = TestMysql.pool(MysqlServerPreparedTest.withOptions(url, OPTIONS), 16);
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

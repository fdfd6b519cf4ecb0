package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;
import java.sql.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The tuning {@code docs/operations.md} recommends, server-side prepared statements
 * ({@code useServerPrepStmts=true}), decides as the text protocol does: the whole conformance
 * suite through MariaDB Connector/J so configured, on the same server ({@link
 * MysqlConnectorJServerPreparedTest} does the same through MySQL Connector/J).
 */
class MysqlServerPreparedTest extends ConformanceSuite {
  private static HikariDataSource pool;

  /** {@code url} with {@code options} added to its query string. */
  static String withOptions(String url, String options) {
    return url + (url.contains("?") ? "&" : "?") + options;
  }

  private static synchronized HikariDataSource pool() {
    if (pool == null) {
      pool = TestMysql.pool(withOptions(TestMysql.url(), "useServerPrepStmts=true"), 16);
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
  void theConnectionsPrepareOnTheServer() throws Exception {
    try (Connection c = pool().getConnection()) {
      assertThat(c.getMetaData().getURL()).contains("useServerPrepStmts=true");
    }
  }
}

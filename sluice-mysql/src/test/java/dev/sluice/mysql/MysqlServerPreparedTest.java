package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import org.junit.jupiter.api.Test;

/**
 * The tuning {@code docs/operations.md} recommends, server-side prepared statements
 * ({@code useServerPrepStmts=true}), decides as the text protocol does: the whole conformance
 * suite through MariaDB Connector/J so configured, on the same server ({@link
 * MysqlConnectorJServerPreparedTest} does the same through MySQL Connector/J).
 */
class MysqlServerPreparedTest extends DriverConformance {
  @Override
  protected String jdbcUrl() {
    return withOptions(TestMysql.url(), "useServerPrepStmts=true");
  }

  @Test
  void theConnectionsPrepareOnTheServer() throws Exception {
    try (Connection c = pool().getConnection()) {
      assertThat(c.getMetaData().getURL()).contains("useServerPrepStmts=true");
    }
  }
}

package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import org.junit.jupiter.api.Test;

/**
 * MySQL Connector/J with the settings HikariCP recommends for it and {@code docs/operations.md}
 * gives ({@code useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSqlLimit=2048}): the
 * whole conformance suite, on the same server. (Connector/J prepares neither a statement that
 * begins with {@code SET} nor a {@code CALL} on the server, so on MariaDB, where the single-bucket
 * statement begins with {@code SET STATEMENT}, it sends every statement of the store as text.)
 */
class MysqlConnectorJServerPreparedTest extends DriverConformance {
  static final String OPTIONS =
      "useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSize=250&prepStmtCacheSqlLimit=2048";

  @Override
  protected String jdbcUrl() {
    return withOptions(connectorJ(), OPTIONS);
  }

  @Test
  void theConnectionsAreConnectorJs() throws Exception {
    try (Connection c = pool().getConnection()) {
      assertThat(c.getMetaData().getDriverName()).startsWith("MySQL Connector/J");
    }
  }
}

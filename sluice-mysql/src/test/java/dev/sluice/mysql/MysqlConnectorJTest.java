package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import org.junit.jupiter.api.Test;

/**
 * MySQL's own driver works as MariaDB's does: the whole conformance suite through MySQL
 * Connector/J ({@code jdbc:mysql://}), on the same server.
 */
class MysqlConnectorJTest extends DriverConformance {
  @Override
  protected String jdbcUrl() {
    return connectorJ();
  }

  @Test
  void theConnectionsAreConnectorJs() throws Exception {
    try (Connection c = pool().getConnection()) {
      assertThat(c.getMetaData().getDriverName()).startsWith("MySQL Connector/J");
    }
  }
}

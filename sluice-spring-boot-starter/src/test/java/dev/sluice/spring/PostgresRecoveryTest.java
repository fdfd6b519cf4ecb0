package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;

/**
 * The starter gives the PostgreSQL store connections of its own to the database
 * spring.datasource.* names, for decisions while the application's pool waits out its back-off
 * after an outage; a DataSource it cannot see into gets none.
 */
class PostgresRecoveryTest {
  @Test
  void postgresUrl_getsDirectConnections_otherUrlsNone() {
    MockEnvironment env = new MockEnvironment()
        .withProperty("spring.datasource.url", "jdbc:postgresql://127.0.0.1:5/app?password=secret")
        .withProperty("spring.datasource.username", "app");
    assertThat(PostgresStores.direct(env)).isNotNull()
        .hasToString("direct connections to jdbc:postgresql://127.0.0.1:5/app?password=***");
    assertThat(PostgresStores.direct(new MockEnvironment()
        .withProperty("spring.datasource.url", "jdbc:h2:mem:x"))).isNull();
    assertThat(PostgresStores.direct(new MockEnvironment())).isNull();
  }
}

package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;

/**
 * {@code sluice.store.type: auto} with an application DataSource: the store follows the
 * database, by {@code spring.datasource.url} or, without it, by what the connection says.
 */
class DatabaseStoreTest {
  /** A DataSource whose connections say they are {@code product}, or cannot connect (null). */
  private static DataSource database(String product) {
    return (DataSource) Proxy.newProxyInstance(DatabaseStoreTest.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (p, m, a) -> {
          if (!m.getName().equals("getConnection")) {
            throw new UnsupportedOperationException(m.getName());
          }
          if (product == null) {
            throw new SQLException("Connection refused");
          }
          DatabaseMetaData meta = (DatabaseMetaData) Proxy.newProxyInstance(
              DatabaseStoreTest.class.getClassLoader(), new Class<?>[] {DatabaseMetaData.class},
              (mp, mm, ma) -> mm.getName().equals("getDatabaseProductName") ? product : null);
          return Proxy.newProxyInstance(DatabaseStoreTest.class.getClassLoader(),
              new Class<?>[] {Connection.class}, (cp, cm, ca) -> switch (cm.getName()) {
                case "getMetaData" -> meta;
                case "close" -> null;
                default -> throw new UnsupportedOperationException(cm.getName());
              });
        });
  }

  @Test
  void theUrlDecides_whenItIsSet() {
    MockEnvironment env = new MockEnvironment();
    env.setProperty("spring.datasource.url", "jdbc:mysql://db:3306/app");
    assertThat(SluiceAutoConfiguration.databaseStore(database("PostgreSQL"), env, true, true))
        .isEqualTo("mysql");
    env.setProperty("spring.datasource.url", "jdbc:mariadb://db:3306/app");
    assertThat(SluiceAutoConfiguration.databaseStore(database(null), env, true, true))
        .isEqualTo("mysql");
    env.setProperty("spring.datasource.url", "jdbc:postgresql://db/app");
    assertThat(SluiceAutoConfiguration.databaseStore(database("MariaDB"), env, true, true))
        .isEqualTo("postgres");
    assertThat(SluiceAutoConfiguration.databaseStore(database("MariaDB"), env, false, true))
        .as("a PostgreSQL URL without sluice-postgres").isEqualTo("memory");
  }

  @Test
  void withoutAUrl_theConnectionSaysWhichDatabase() {
    MockEnvironment env = new MockEnvironment();
    assertThat(SluiceAutoConfiguration.databaseStore(database("MariaDB"), env, true, true))
        .isEqualTo("mysql");
    assertThat(SluiceAutoConfiguration.databaseStore(database("MySQL"), env, true, true))
        .isEqualTo("mysql");
    assertThat(SluiceAutoConfiguration.databaseStore(database("PostgreSQL"), env, true, true))
        .isEqualTo("postgres");
    assertThat(SluiceAutoConfiguration.databaseStore(database("H2"), env, false, true))
        .as("neither database's module fits").isEqualTo("memory");
    assertThat(SluiceAutoConfiguration.databaseStore(database(null), env, false, true))
        .as("unreachable: the MySQL store's build says why").isEqualTo("mysql");
  }

  @Test
  void withoutSluiceMysql_aDataSourceMeansPostgresAsBefore() {
    MockEnvironment env = new MockEnvironment();
    env.setProperty("spring.datasource.url", "jdbc:mysql://db:3306/app");
    assertThat(SluiceAutoConfiguration.databaseStore(database("MySQL"), env, true, false))
        .isEqualTo("postgres");
    assertThat(SluiceAutoConfiguration.databaseStore(database("MySQL"), env, false, false))
        .isEqualTo("memory");
  }
}

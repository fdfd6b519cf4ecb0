package dev.sluice.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import javax.sql.DataSource;

/**
 * Idle rows go: rows whose {@code expires_at} has passed (in the table, in its groups' table, and
 * permits whose lease ended in its permits' and group permits' tables) are deleted in batches,
 * each its own short statement that skips rows a decision holds, every {@code every} on a daemon thread and whenever {@link #pruneExpired()} is called.
 * Decisions never depend on it: an expired row reads as an empty bucket.
 */
final class Pruning implements AutoCloseable {
  private final DataSource dataSource;
  private final String table;
  private final LongSupplier micros;
  private final int pruneBatch;
  private final String pruneSql;
  private final String pruneGroupsSql;
  private final String prunePermitsSql;
  private final String pruneGroupPermitsSql;
  private final AtomicLong pruned = new AtomicLong();
  private final ScheduledExecutorService pruner;

  Pruning(DataSource dataSource, String table, LongSupplier micros, int batch, Duration every) {
    this.dataSource = dataSource;
    this.table = table;
    this.micros = micros;
    this.pruneBatch = batch;
    this.pruneSql = "WITH victims AS (SELECT key FROM " + table
        + " WHERE expires_at < COALESCE(to_timestamp(?::float8 / 1000000), clock_timestamp())"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + " t USING victims WHERE t.key = victims.key";
    this.pruneGroupsSql = "WITH victims AS (SELECT grp, key FROM " + table + "_groups"
        + " WHERE expires_at < COALESCE(to_timestamp(?::float8 / 1000000), clock_timestamp())"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + "_groups t USING victims"
        + " WHERE t.grp = victims.grp AND t.key = victims.key";
    this.prunePermitsSql = "WITH victims AS (SELECT key, id FROM " + table + "_permits"
        + " WHERE expires_at <= floor(COALESCE(?::numeric,"
        + " (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + "_permits t USING victims"
        + " WHERE t.key = victims.key AND t.id = victims.id";
    this.pruneGroupPermitsSql = "WITH victims AS (SELECT grp, key, id FROM " + table
        + "_group_permits WHERE expires_at <= floor(COALESCE(?::numeric,"
        + " (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + "_group_permits t USING victims"
        + " WHERE t.grp = victims.grp AND t.key = victims.key AND t.id = victims.id";
    if (every != null) {
      pruner = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-postgres-prune-" + table);
        t.setDaemon(true);
        return t;
      });
      long millis = every.toMillis();
      pruner.scheduleWithFixedDelay(() -> {
        try {
          pruneExpired();
        } catch (RuntimeException e) {
          // the next run tries again; pruning is housekeeping, decisions never depend on it
        }
      }, millis, millis, TimeUnit.MILLISECONDS);
    } else {
      pruner = null;
    }
  }

  /** Deletes the expired rows now; how many. */
  public long pruneExpired() {
    long total = 0;
    for (String sql : new String[] {pruneSql, pruneGroupsSql, prunePermitsSql,
        pruneGroupPermitsSql}) {
      while (true) {
        int n = pruneBatch(sql);
        total += n;
        if (n < pruneBatch) {
          break;
        }
      }
    }
    pruned.addAndGet(total);
    return total;
  }

  private int pruneBatch(String sql) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(sql)) {
        if (micros == null) {
          p.setNull(1, Types.BIGINT);
        } else {
          p.setLong(1, micros.getAsLong());
        }
        p.setInt(2, pruneBatch);
        return p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new PostgresStoreException("PostgreSQL pruning of table " + table + " failed: "
          + e.getMessage(), e);
    }
  }

  /** Rows deleted since this store was built. */
  long pruned() {
    return pruned.get();
  }

  @Override
  public void close() {
    if (pruner != null) {
      pruner.shutdownNow();
    }
  }
}

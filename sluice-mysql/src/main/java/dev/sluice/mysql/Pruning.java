package dev.sluice.mysql;

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
 * Idle rows go: rows whose {@code expires_at} has passed (buckets, groups, instances, and permits
 * whose lease ended) are deleted in batches, each its own short statement at READ COMMITTED (so
 * that it locks only the rows it deletes and no gap a new key's first decision inserts into),
 * every {@code every} on a daemon thread and whenever {@link #pruneExpired()} is called.
 * Decisions never depend on it: an expired row reads as an empty bucket, and a decision writes
 * its row whether or not pruning deleted it meanwhile.
 */
final class Pruning implements AutoCloseable {
  private final DataSource dataSource;
  private final String table;
  private final LongSupplier micros;
  private final int pruneBatch;
  private final String[] statements;
  private final AtomicLong pruned = new AtomicLong();
  private final ScheduledExecutorService pruner;

  Pruning(DataSource dataSource, String table, LongSupplier micros, int batch, Duration every) {
    this.dataSource = dataSource;
    this.table = table;
    this.micros = micros;
    this.pruneBatch = batch;
    String nowMicros = "COALESCE(?, sluice_my1_now())";
    String nowMillis = "FLOOR(COALESCE(?, sluice_my1_now()) / 1000)";
    this.statements = new String[] {
        "DELETE FROM " + table + " WHERE expires_at < " + nowMicros + " LIMIT ?",
        "DELETE FROM " + table + "_groups WHERE expires_at < " + nowMicros + " LIMIT ?",
        "DELETE FROM " + table + "_instances WHERE expires_at <= " + nowMicros + " LIMIT ?",
        "DELETE FROM " + table + "_permits WHERE expires_at <= " + nowMillis + " LIMIT ?",
        "DELETE FROM " + table + "_group_permits WHERE expires_at <= " + nowMillis + " LIMIT ?"};
    if (every != null) {
      pruner = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-mysql-prune-" + table);
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
  long pruneExpired() {
    long total = 0;
    for (String sql : statements) {
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
      int isolation = c.getTransactionIsolation();
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      try (PreparedStatement p = c.prepareStatement(sql)) {
        if (micros == null) {
          p.setNull(1, Types.BIGINT);
        } else {
          p.setLong(1, micros.getAsLong());
        }
        p.setInt(2, pruneBatch);
        return p.executeUpdate();
      } finally {
        c.setTransactionIsolation(isolation);
      }
    } catch (SQLException e) {
      throw new MysqlStoreException("MySQL pruning of table " + table + " failed: "
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

package dev.sluice.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;
import javax.sql.DataSource;

/**
 * A JDBC store's pruning: each of its statements deletes expired rows in batches, each batch its
 * own short statement, until a batch deletes fewer rows than a batch holds; every {@code every}
 * on a daemon thread, and whenever {@link #pruneExpired()} is called. Each statement takes two
 * parameters: the time in microseconds since the epoch (NULL: the database's clock) and the
 * batch size. Decisions never depend on it: an expired row reads as an empty one.
 */
public final class BatchPruning implements AutoCloseable {
  private final DataSource dataSource;
  private final List<String> statements;
  private final LongSupplier micros;
  private final int batch;
  private final boolean readCommitted;
  private final Function<SQLException, RuntimeException> failure;
  private final AtomicLong pruned = new AtomicLong();
  private final ScheduledExecutorService pruner;

  /**
   * @param threadName the daemon thread's name, when {@code every} is not null
   * @param micros the time (the stores' test hook), or null for the database's clock
   * @param every how often to prune on a daemon thread; null: only when asked
   * @param readCommitted run each batch at READ COMMITTED (then it locks only the rows it
   *     deletes: no gap a new key's first insert waits on)
   * @param failure the exception a failed batch is thrown as
   */
  public BatchPruning(DataSource dataSource, List<String> statements, LongSupplier micros,
      int batch, Duration every, String threadName, boolean readCommitted,
      Function<SQLException, RuntimeException> failure) {
    this.dataSource = dataSource;
    this.statements = List.copyOf(statements);
    this.micros = micros;
    this.batch = batch;
    this.readCommitted = readCommitted;
    this.failure = failure;
    if (every != null) {
      pruner = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, threadName);
        t.setDaemon(true);
        return t;
      });
      long millis = every.toMillis();
      var unused = pruner.scheduleWithFixedDelay(() -> {
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
    for (String sql : statements) {
      while (true) {
        int n = pruneBatch(sql);
        total += n;
        if (n < batch) {
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
      if (readCommitted) {
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      }
      try (PreparedStatement p = c.prepareStatement(sql)) {
        if (micros == null) {
          p.setNull(1, Types.BIGINT);
        } else {
          p.setLong(1, micros.getAsLong());
        }
        p.setInt(2, batch);
        return p.executeUpdate();
      } finally {
        if (readCommitted) {
          c.setTransactionIsolation(isolation);
        }
      }
    } catch (SQLException e) {
      throw failure.apply(e);
    }
  }

  /** Rows deleted since this was built. */
  public long pruned() {
    return pruned.get();
  }

  @Override
  public void close() {
    if (pruner != null) {
      pruner.shutdownNow();
    }
  }
}

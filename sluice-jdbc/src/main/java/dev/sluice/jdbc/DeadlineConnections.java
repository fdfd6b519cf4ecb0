package dev.sluice.jdbc;

import dev.sluice.spi.StoreUnavailableException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Connections for decisions, each by its decision's deadline: from the pool, whose own wait
 * (HikariCP's connectionTimeout) is cut short there, or, while the pool is stuck after an outage,
 * from {@link RecoveryConnections}; and statement timeouts in milliseconds where the driver has
 * them.
 */
public final class DeadlineConnections implements AutoCloseable {
  private static final ClassValue<Method> MILLIS_TIMEOUT = new ClassValue<>() {
    @Override
    protected Method computeValue(Class<?> type) {
      try {
        return type.getMethod("setQueryTimeoutMs", long.class);
      } catch (NoSuchMethodException e) {
        return null;
      }
    }
  };

  private final DataSource dataSource;
  /** Connections for decisions while the pool is stuck after an outage; null: none. */
  private final RecoveryConnections recovery;
  /** Names the store in failures, e.g. "PostgreSQL decision on table t". */
  private final String what;
  private final long timeoutMillis;

  public DeadlineConnections(DataSource dataSource, RecoveryConnections recovery, String what,
      long timeoutMillis) {
    this.dataSource = dataSource;
    this.recovery = recovery;
    this.what = what;
    this.timeoutMillis = timeoutMillis;
  }

  /**
   * A connection from the pool by {@code deadline}: the pool's own wait (HikariCP's
   * connectionTimeout) is cut short there.
   */
  public Connection get(long deadline) {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new StoreUnavailableException(what + ": no time"
          + " left within the store's timeout (" + timeoutMillis + " ms) to get a connection", null);
    }
    Connection c = null;
    SQLException failure = null;
    if (recovery == null || recovery.tryPool()) {
      // stalled, the pool is only probed: a short wait, so that the decision can still take a
      // recovery connection
      boolean probe = recovery != null && recovery.stalled();
      Deadline guard = Deadline.arm(probe ? Math.min(left, RecoveryConnections.PROBE_WAIT_NANOS)
          : left);
      try {
        c = dataSource.getConnection();
      } catch (SQLException e) {
        failure = e;
      } finally {
        guard.disarm();   // a connection that came just as the deadline passed is used all the same
      }
      if (recovery != null) {
        if (c != null) {
          recovery.poolRecovered();
        } else {
          recovery.poolFailed();
        }
      }
    }
    if (c == null && recovery != null && recovery.stalled()) {
      Deadline guard = Deadline.arm(Math.max(0, deadline - System.nanoTime()));
      try {
        c = recovery.connection(deadline);
      } catch (SQLException e) {
        failure = e;
      } finally {
        guard.disarm();
      }
    }
    if (c != null) {
      return c;
    }
    throw new StoreUnavailableException(what + ": no"
        + " connection within the store's timeout (" + timeoutMillis + " ms): "
        + (failure == null ? "the pool gave none" : failure.getMessage()), failure);
  }

  public static void timeout(PreparedStatement p, long millisLeft) throws SQLException {
    Statement raw = p.isWrapperFor(Statement.class) ? p.unwrap(Statement.class) : p;
    Method millis = MILLIS_TIMEOUT.get(raw.getClass());
    if (millis != null) {
      try {
        millis.invoke(raw, millisLeft);
        return;
      } catch (ReflectiveOperationException | RuntimeException e) {
        // fall back to the standard, whole-second timeout
      }
    }
    p.setQueryTimeout((int) Math.max(1, (millisLeft + 999) / 1000));
  }

  @Override
  public void close() {
    if (recovery != null) {
      recovery.close();
    }
  }
}

package dev.sluice.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/*
 * Decisions while the pool is stuck after an outage (the recoveryDataSource of the PostgreSQL and MySQL stores' builders).
 *
 * A pool that failed to connect during an outage waits out its own back-off before it tries again
 * (HikariCP 5: doubling to 5 s, not configurable), so the database may accept connections for
 * seconds before the pool hands one out. From the first decision the pool fails ("stalled") until
 * the pool hands out a connection again, decisions take one of a few connections opened from the
 * recovery DataSource (one fresh connection per getConnection, e.g. PGSimpleDataSource or MariaDbDataSource) and kept
 * while stalled; one decision every PROBE_NANOS tries the pool first, for PROBE_WAIT_NANOS at
 * most, and the first that gets a connection from it ends the stall and closes the recovery
 * connections.
 */
public final class RecoveryConnections {
  /** Connections opened from the recovery DataSource at most, per store. */
  public static final int MOST = 2;
  private static final long PROBE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  /** How long a probe of a stalled pool waits for a connection before it takes a recovery one. */
  static final long PROBE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private final DataSource direct;
  private final ArrayBlockingQueue<Connection> idle = new ArrayBlockingQueue<>(MOST);
  private final Semaphore open = new Semaphore(MOST);
  private final AtomicLong nextProbe = new AtomicLong();
  private volatile boolean stalled;

  public RecoveryConnections(DataSource direct) {
    this.direct = direct;
  }

  boolean stalled() {
    return stalled;
  }

  /** Whether this decision should try the pool (not stalled, or its turn to probe it). */
  boolean tryPool() {
    if (!stalled) {
      return true;
    }
    long now = System.nanoTime();
    long probe = nextProbe.get();
    return now - probe >= 0 && nextProbe.compareAndSet(probe, now + PROBE_NANOS);
  }

  /** The pool failed to hand out a connection in time. */
  void poolFailed() {
    if (!stalled) {
      nextProbe.set(System.nanoTime() + PROBE_NANOS);
      stalled = true;
    }
  }

  /** The pool handed out a connection: the stall is over. */
  void poolRecovered() {
    if (stalled) {
      stalled = false;
      for (Connection c = idle.poll(); c != null; c = idle.poll()) {
        closeQuietly(c);
        open.release();
      }
    }
  }

  /**
   * A recovery connection by {@code deadline} (System.nanoTime()), or null if none could be had:
   * an idle one, a new one while fewer than {@link #MOST} are open, or one given back in time.
   */
  Connection connection(long deadline) throws SQLException {
    Connection c = idle.poll();
    if (c == null && open.tryAcquire()) {
      try {
        c = direct.getConnection();
      } catch (SQLException | RuntimeException e) {
        open.release();
        throw e;
      }
    }
    if (c == null) {
      try {
        c = idle.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
    return c == null ? null : lent(c);
  }

  /** The connection as the caller sees it: closing it gives it back while stalled. */
  private Connection lent(Connection physical) {
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
        new Class<?>[] {Connection.class}, (proxy, method, args) -> {
          if (method.getName().equals("close") && method.getParameterCount() == 0) {
            giveBack(physical);
            return null;
          }
          try {
            return method.invoke(physical, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private void giveBack(Connection c) {
    boolean healthy;
    try {
      healthy = !c.isClosed() && c.getAutoCommit();
    } catch (SQLException e) {
      healthy = false;
    }
    if (healthy && stalled && idle.offer(c)) {
      return;
    }
    closeQuietly(c);
    open.release();
  }

  /** Closes what is idle (the store closes). */
  void close() {
    stalled = false;
    for (Connection c = idle.poll(); c != null; c = idle.poll()) {
      closeQuietly(c);
      open.release();
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException e) {
      // a connection that cannot even close is gone either way
    }
  }
}

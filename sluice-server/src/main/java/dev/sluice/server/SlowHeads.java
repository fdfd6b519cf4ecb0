package dev.sluice.server;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Closes a connection that has been receiving a request's head (or a body Jetty has not handed
 * over) for a whole request timeout without completing a request: a slow head holds no thread,
 * but it holds a connection, and this bounds how long.
 */
final class SlowHeads implements Connection.Listener {
  private final long periodMillis;
  private final Connector connector;
  private final Map<Connection, Scheduler.Task> checks = new ConcurrentHashMap<>();

  SlowHeads(long periodMillis, Connector connector) {
    this.periodMillis = periodMillis;
    this.connector = connector;
  }

  @Override
  public void onOpened(Connection connection) {
    schedule(connection, connection.getMessagesIn(), connection.getBytesIn());
  }

  private void schedule(Connection c, long messages, long bytes) {
    checks.put(c, connector.getScheduler().schedule(() -> check(c, messages, bytes), periodMillis,
        TimeUnit.MILLISECONDS));
  }

  private void check(Connection c, long messages, long bytes) {
    if (!c.getEndPoint().isOpen()) {
      checks.remove(c);
      return;
    }
    long m = c.getMessagesIn();
    long b = c.getBytesIn();
    if (m == messages && b > bytes) {
      c.getEndPoint().close();   // bytes arrived all period long, and no request came of them
      checks.remove(c);
      return;
    }
    schedule(c, m, b);
  }

  @Override
  public void onClosed(Connection connection) {
    Scheduler.Task t = checks.remove(connection);
    if (t != null) {
      t.cancel();
    }
  }
}

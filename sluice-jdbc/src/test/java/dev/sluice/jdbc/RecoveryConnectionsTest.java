package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * docs/operations.md: while the pool is stalled, decisions use at most two connections of their
 * own, kept while needed and closed once the pool serves again.
 */
class RecoveryConnectionsTest {
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger mostOpen = new AtomicInteger();
  private final AtomicInteger opened = new AtomicInteger();

  /** A DataSource whose connections only count themselves. */
  private DataSource direct() {
    return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {DataSource.class}, (p, m, a) -> {
          if (!m.getName().equals("getConnection")) {
            throw new UnsupportedOperationException(m.getName());
          }
          opened.incrementAndGet();
          mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
          boolean[] closed = {false};
          return Proxy.newProxyInstance(getClass().getClassLoader(),
              new Class<?>[] {Connection.class}, (c, cm, ca) -> switch (cm.getName()) {
                case "close" -> {
                  if (!closed[0]) {
                    closed[0] = true;
                    open.decrementAndGet();
                  }
                  yield null;
                }
                case "isClosed" -> closed[0];
                case "getAutoCommit" -> true;
                default -> throw new UnsupportedOperationException(cm.getName());
              });
        });
  }

  @Test
  void stalled_atMostTwoConnections_keptWhileNeeded_closedWhenThePoolServes() throws Exception {
    RecoveryConnections recovery = new RecoveryConnections(direct());
    assertThat(recovery.stalled()).isFalse();
    recovery.poolFailed();
    assertThat(recovery.stalled()).isTrue();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicInteger served = new AtomicInteger();
    try {
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        work.add(pool.submit(() -> {
          for (int i = 0; i < 2_000; i++) {
            Connection c = recovery.connection(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
            if (c != null) {
              served.incrementAndGet();
              c.close();   // gives it back while stalled
            }
          }
          return null;
        }));
      }
      for (Future<?> f : work) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(served.get()).isEqualTo(16_000);
    assertThat(mostOpen.get()).as("connections open at once").isLessThanOrEqualTo(RecoveryConnections.MOST);
    assertThat(opened.get()).as("kept and reused, not one per decision").isLessThanOrEqualTo(RecoveryConnections.MOST);
    assertThat(open.get()).as("idle, kept while stalled").isPositive();
    recovery.poolRecovered();
    assertThat(recovery.stalled()).isFalse();
    assertThat(open.get()).as("closed once the pool serves again").isZero();
  }
}

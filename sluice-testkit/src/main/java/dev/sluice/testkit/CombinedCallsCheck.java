package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Combined calls behind a key the database holds (a SQL store's {@code combineDecisions}): the
 * callers that queue behind a call in flight each wait for that call and their batch's, each
 * bounded by the store's timeout; the failures count per call, not per caller; nothing is
 * charged. The store's test holds the key (as another session would) and releases it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class CombinedCallsCheck {
  /** Releases the key the test holds, once the database has no session left waiting for it. */
  @FunctionalInterface
  public interface Release {
    void release() throws Exception;
  }

  private CombinedCallsCheck() {}

  /**
   * Waits (30 s at most) until {@code countQuery} on {@code c} counts no session waiting for the
   * key: a call its caller gave up on at its deadline may still wait in the server for a moment
   * (a timed-out call may have committed), and the key must not be released under it.
   */
  public static void awaitNoSessionWaiting(Connection c, String countQuery) throws SQLException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    for (;;) {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(countQuery)) {
        rs.next();
        if (rs.getLong(1) == 0) {
          return;
        }
      }
      assertThat(System.nanoTime()).as("sessions still waiting after 30 s").isLessThan(deadline);
      Thread.onSpinWait();
    }
  }

  /**
   * Eight callers of {@code tryAcquire(key)} on {@code limiter} (fail open, a timeout well under
   * a second, capacity 10, the key charged 1 before it was held) while the key is held; then
   * {@code release}; then the checks above.
   */
  public static void callersBehindAHeldKey(RateLimiter limiter, String key, Release release)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Long>> calls = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        calls.add(pool.submit(() -> {
          go.await();
          long start = System.nanoTime();
          Decision d = limiter.tryAcquire(key);
          assertThat(d.isDegraded()).isTrue();
          assertThat(d.isAllowed()).as("fail open").isTrue();
          return System.nanoTime() - start;
        }));
      }
      go.countDown();
      // the key is released only after every call returned, so none waited for the holder; a
      // call's own deadline is two timeouts, and the bound leaves room for a busy host's
      // scheduling (2.5 s once beside two busy loops, with a 100-ms timeout)
      for (Future<Long> f : calls) {
        assertThat(f.get(30, TimeUnit.SECONDS)).as("two timeouts at most, with room")
            .isLessThan(TimeUnit.SECONDS.toNanos(5));
      }
      release.release();
    } finally {
      pool.shutdownNow();
    }
    assertThat(limiter.stats().storeErrors()).as("a failure per call, not per caller")
        .isBetween(2L, 7L);
    assertThat(limiter.check(key, 9).isAllowed()).as("only the first decision charged").isTrue();
    assertThat(limiter.check(key, 9.01).isAllowed()).isFalse();
  }
}

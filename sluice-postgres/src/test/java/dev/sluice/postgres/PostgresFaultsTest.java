package dev.sluice.postgres;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.testkit.Ports;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A dedicated PostgreSQL stopped mid-load and started again on the same data, behind a pool that
 * waits up to 5 s for a connection (HikariCP's default is 30 s): the store's 200 ms timeout
 * bounds every decision all the same (issue 11, defect 3: calls took the pool's 2 s).
 */
class PostgresFaultsTest {

  @Test
  void restartedMidLoad_policyHolds_thenRecoversWithDecisionsKept() throws Exception {
    int port = Ports.free();
    File data = Files.createTempDirectory("sluice-pg-restart").toFile();
    EmbeddedPostgres pg = TestPostgres.start(port, data);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(pg.getJdbcUrl("postgres", "postgres"));
    config.setMaximumPoolSize(8);
    config.setConnectionTimeout(5_000);   // longer than the store's timeout: the store cuts it short
    config.setInitializationFailTimeout(-1);
    HikariDataSource ds = new HikariDataSource(config);
    PostgresStore store = PostgresStore.builder(ds).createIfMissing(true)
        .statementTimeout(Duration.ofMillis(200)).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_CLOSED).circuitBreaker(CircuitBreakerSettings.defaults().withOpenFor(Duration.ofMillis(200))).build();
    RateLimiter busy = Sluice.builder().limit(Limit.leakyBucket(1_000_000, Rate.perSecond(1_000_000)))
        .store(store).onStoreFailure(StoreFailure.FAIL_CLOSED).circuitBreaker(CircuitBreakerSettings.defaults().withOpenFor(Duration.ofMillis(200)))
        .build();
    // decisions made before the restart: 4 of 10 on "kept"
    for (int i = 0; i < 4; i++) {
      assertThat(l.tryAcquire("kept").isAllowed()).isTrue();
    }
    ExecutorService pool = Executors.newFixedThreadPool(4);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong slowest = new AtomicLong();
    AtomicLong degradedAdmitted = new AtomicLong();
    AtomicLong down = new AtomicLong(Long.MAX_VALUE);
    try {
      List<Future<?>> load = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int id = t;
        load.add(pool.submit(() -> {
          int i = 0;
          while (!stop.get()) {
            long start = System.nanoTime();
            Decision d = busy.tryAcquire("user:" + id + ":" + (i++ % 100));
            if (start > down.get()) {
              slowest.accumulateAndGet(System.nanoTime() - start, Math::max);
            }
            if (d.isDegraded() && d.isAllowed()) {
              degradedAdmitted.incrementAndGet();
            }
          }
        }));
      }
      waitUntil(() -> !busy.check("probe").isDegraded(), 10);   // load against a live server
      down.set(System.nanoTime());
      pg.close();   // stopped mid-load
      waitUntil(() -> busy.stats().degradedDecisions() >= 500, 30);
      assertThat(busy.stats().degradedDecisions()).as("the policy answers while PostgreSQL is down")
          .isGreaterThanOrEqualTo(500);
      assertThat(degradedAdmitted.get()).as("fail closed admits nothing while down").isZero();
      assertThat(slowest.get()).as("no call takes much past the store's 200 ms timeout, whatever"
          + " the pool's").isLessThan(TimeUnit.MILLISECONDS.toNanos(600));
      pg = TestPostgres.start(port, data);   // the same data directory, the same port
      long answering = System.nanoTime();
      while (busy.tryAcquire("probe").isDegraded()
          && System.nanoTime() - answering < TimeUnit.SECONDS.toNanos(30)) {
        Thread.sleep(10);   // polling a real server's recovery, not timing the test
      }
      double recovery = (System.nanoTime() - answering) / 1e9;
      System.out.printf("PostgreSQL restart: slowest call while down %.0f ms; decisions back"
          + " %.2f s after the database answered%n", slowest.get() / 1e6, recovery);
      assertThat(recovery).as("seconds from the database answering to decisions reaching it")
          .isLessThan(1.5);
      stop.set(true);
      for (Future<?> f : load) {
        f.get(30, TimeUnit.SECONDS);
      }
      // what was decided before the restart is still there: 6 more fit, not 10
      for (int i = 0; i < 6; i++) {
        assertThat(l.tryAcquire("kept").isAllowed()).as("admission " + (i + 5)).isTrue();
      }
      Decision full = l.tryAcquire("kept");
      assertThat(full.isAllowed()).isFalse();
      assertThat(full.isDegraded()).isFalse();
    } finally {
      stop.set(true);
      pool.shutdownNow();
      store.close();
      ds.close();
      pg.close();
    }
  }

  private static void waitUntil(java.util.function.BooleanSupplier condition, int seconds)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(20);   // waiting for real traffic, not for time to pass
    }
  }
}

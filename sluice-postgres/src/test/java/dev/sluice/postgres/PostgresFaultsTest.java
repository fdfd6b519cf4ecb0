package dev.sluice.postgres;

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

/** A dedicated PostgreSQL stopped mid-load and started again on the same data. */
class PostgresFaultsTest {

  @Test
  void restartedMidLoad_policyHolds_thenRecoversWithDecisionsKept() throws Exception {
    int port = Ports.free();
    File data = Files.createTempDirectory("sluice-pg-restart").toFile();
    EmbeddedPostgres pg = TestPostgres.start(port, data);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(pg.getJdbcUrl("postgres", "postgres"));
    config.setMaximumPoolSize(8);
    config.setConnectionTimeout(250);   // a pool that cannot connect answers within this
    config.setInitializationFailTimeout(-1);
    HikariDataSource ds = new HikariDataSource(config);
    PostgresStore store = PostgresStore.builder(ds).createIfMissing(true)
        .statementTimeout(Duration.ofMillis(200)).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_CLOSED).circuitBreaker(3, Duration.ofMillis(200)).build();
    RateLimiter busy = Sluice.builder().limit(Limit.leakyBucket(1_000_000, Rate.perSecond(1_000_000)))
        .store(store).onStoreFailure(StoreFailure.FAIL_CLOSED).circuitBreaker(3, Duration.ofMillis(200))
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
      assertThat(slowest.get()).as("no call blocks much past the pool's and statement's timeouts")
          .isLessThan(TimeUnit.SECONDS.toNanos(3));
      pg = TestPostgres.start(port, data);   // the same data directory, the same port
      boolean recovered = false;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!recovered && System.nanoTime() < deadline) {
        long before = busy.stats().degradedDecisions();
        Thread.sleep(300);
        recovered = busy.stats().degradedDecisions() == before;
      }
      assertThat(recovered).as("decisions reach PostgreSQL again through the pool").isTrue();
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

package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.postgres.PostgresStore;
import dev.sluice.redis.RedisStore;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The shared stores' asynchronous calls handed over by many non-blocking threads at once
 * (Reactor's parallel workers, which BlockHound watches as it watches event loops): the hand-over
 * never parks, and the decisions are exact.
 */
class AsyncStoresNonBlockingTest {
  private static final int LOOPS = 4;
  private static final int PER_LOOP = 1_500;

  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }

  @Test
  void postgres_manyEventLoopsHandingOverAtOnce_neverPark_andEveryDecisionCounts()
      throws Exception {
    try (HikariDataSource ds = new HikariDataSource()) {
      ds.setJdbcUrl(TestStores.postgresUrl());
      ds.setUsername("postgres");
      ds.setMaximumPoolSize(8);
      String table = "async_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
      try (PostgresStore store = PostgresStore.builder(ds).table(table).createIfMissing(true).build()) {
        hammer(Sluice.builder().limit(Limit.leakyBucket(1_000, Rate.perHour(1))).store(store).build());
      }
    }
  }

  @Test
  void redis_manyEventLoopsHandingOverAtOnce_neverPark_andEveryDecisionCounts() throws Exception {
    try (RedisStore store = RedisStore.builder(TestStores.redisUri())
        .prefix("async-" + UUID.randomUUID() + ":").commandTimeout(Duration.ofSeconds(10)).build()) {
      hammer(Sluice.builder().limit(Limit.leakyBucket(1_000, Rate.perHour(1))).store(store).build());
    }
  }

  /** {@value #LOOPS} non-blocking threads × {@value #PER_LOOP} decisions on one key of 1,000. */
  private static void hammer(RateLimiter limiter) throws Exception {
    Scheduler loops = Schedulers.newParallel("loops", LOOPS);
    ConcurrentLinkedQueue<Throwable> refused = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<CompletableFuture<Decision>> decisions = new ConcurrentLinkedQueue<>();
    AtomicBoolean go = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(LOOPS);   // awaited by the test's own thread only
    try {
      for (int l = 0; l < LOOPS; l++) {
        loops.schedule(() -> {
          try {
            while (!go.get()) {
              // a busy start line: waiting on a latch would itself be a blocking call here
            }
            for (int i = 0; i < PER_LOOP; i++) {
              decisions.add(limiter.tryAcquireAsync("hot", 1));
            }
          } catch (Throwable e) {
            refused.add(e);
          } finally {
            done.countDown();
          }
        });
      }
      go.set(true);
      assertThat(done.await(60, TimeUnit.SECONDS)).as("the loops handed every call over").isTrue();
    } finally {
      loops.dispose();
    }
    assertThat(refused).isEmpty();
    List<Decision> all = new java.util.ArrayList<>();
    for (CompletableFuture<Decision> f : decisions) {
      // waited for here, on the test's thread (orTimeout would cancel a timer on Lettuce's loop)
      all.add(f.get(60, TimeUnit.SECONDS));
    }
    assertThat(all).hasSize(LOOPS * PER_LOOP);
    assertThat(all).noneMatch(Decision::isDegraded);
    assertThat(all.stream().filter(Decision::isAllowed).count()).isEqualTo(1_000);
  }
}

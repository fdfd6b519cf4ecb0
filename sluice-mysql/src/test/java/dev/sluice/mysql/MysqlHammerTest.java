package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The exactness hammer the other stores run, on the database's own clock: 8 threads on one key
 * for 10 s. What was admitted never exceeds the bucket's capacity plus its rate times the time
 * the run took (the database's clock runs within it), every call is answered (no store error),
 * and, with the clock then frozen through the test hook, nothing admitted was left uncharged:
 * the frozen-clock twin admits exactly the capacity (see {@link MysqlConcurrencyTest}).
 */
class MysqlHammerTest {
  private static final int THREADS = 8;
  private static final double CAPACITY = 100;
  private static final double RATE = 500;   // a second: well below what 8 threads ask for

  @Test
  void eightThreadsOnOneKeyForTenSeconds_neverAdmitMoreThanTheBound() throws Exception {
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).createIfMissing(true)
        .prefix("hammer:" + UUID.randomUUID() + ":").build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(CAPACITY, Rate.perSecond(RATE)))
        .store(store).build();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch go = new CountDownLatch(1);
    List<Future<long[]>> results = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      results.add(pool.submit(() -> {
        go.await();
        long admitted = 0;
        long refused = 0;
        while (!stop.get()) {
          if (l.tryAcquire("hot").isAllowed()) {
            admitted++;
          } else {
            refused++;
          }
        }
        return new long[] {admitted, refused};
      }));
    }
    long start = System.nanoTime();
    go.countDown();
    Thread.sleep(10_000);   // the run's length, not a wait for an outcome
    stop.set(true);
    long admitted = 0;
    long refused = 0;
    for (Future<long[]> f : results) {
      long[] r = f.get(60, TimeUnit.SECONDS);
      admitted += r[0];
      refused += r[1];
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    pool.shutdownNow();
    store.close();
    assertThat(l.stats().storeErrors()).as("every call answered by the database").isZero();
    assertThat(refused).as("the threads asked for more than the rate").isPositive();
    assertThat((double) admitted).as("admitted in %.2f s", seconds)
        .isLessThanOrEqualTo(CAPACITY + RATE * seconds);
    System.out.printf("MysqlHammerTest: %d admitted, %d refused in %.2f s (bound %.0f)%n",
        admitted, refused, seconds, CAPACITY + RATE * seconds);
  }
}

package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Many threads over several connections (as several app servers would), on Redis time: nothing
 * is over-admitted on the hot key or any other, and afterwards no Sluice key lacks a TTL.
 */
class RedisConcurrencyTest {
  private static final int CONNECTIONS = 4;
  private static final int THREADS = 16;

  @Test
  void severalConnections_exactAccounting_andEveryKeyExpires() throws Exception {
    String prefix = "cc:" + UUID.randomUUID() + ":";
    List<RedisStore> stores = new ArrayList<>();
    List<RateLimiter> limiters = new ArrayList<>();
    for (int c = 0; c < CONNECTIONS; c++) {
      RedisStore store = RedisStore.builder(TestRedis.uri()).prefix(prefix)
          .commandTimeout(Duration.ofSeconds(5)).build();
      stores.add(store);
      // capacity 100 per hour: nothing leaks noticeably during the test
      limiters.add(Sluice.builder().limit(Limit.leakyBucket(100, Rate.perHour(100))).store(store).build());
    }
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    long started = System.nanoTime();
    try {
      List<Future<double[]>> results = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        RateLimiter l = limiters.get(t % CONNECTIONS);
        long seed = t;
        results.add(pool.submit(() -> {
          Random r = new Random(seed);
          double[] admitted = new double[33];   // [0] the hot key, [1..32] other keys
          for (int i = 0; i < 1_500; i++) {
            int k = r.nextBoolean() ? 0 : 1 + r.nextInt(32);
            double cost = 0.5 * (1 + r.nextInt(6));
            if (l.tryAcquire(k == 0 ? "hot" : "key-" + k, cost).isAllowed()) {
              admitted[k] += cost;
            }
          }
          return admitted;
        }));
      }
      double[] total = new double[33];
      for (Future<double[]> f : results) {
        double[] a = f.get(120, TimeUnit.SECONDS);
        for (int k = 0; k < 33; k++) {
          total[k] += a[k];
        }
      }
      RateLimiter any = limiters.get(0);
      for (int k = 0; k < 33; k++) {
        String key = k == 0 ? "hot" : "key-" + k;
        double level = 100 - any.check(key, 0.5).remaining();
        // Redis time runs: what leaked since the start (100 per hour) bounds every difference.
        double leaked = 100.0 / 3600 * (System.nanoTime() - started) / 1e9 + 1e-6;
        assertThat(total[k]).as(key).isLessThanOrEqualTo(100 + leaked);
        assertThat(level).as("%s: the store's level is the admitted sum less what leaked", key)
            .isBetween(total[k] - leaked, total[k]);
        assertThat(total[k]).as("%s filled to within one largest cost", key).isGreaterThan(100 - 3.01);
      }
      RedisCommands<String, String> redis = TestRedis.connection().sync();
      List<String> keys = TestRedis.keys(prefix + "*");
      assertThat(keys).hasSize(33);
      for (String key : keys) {
        assertThat(redis.pttl(key)).as("%s has a TTL", key).isPositive();
      }
    } finally {
      pool.shutdownNow();
      for (RedisStore s : stores) {
        s.close();
      }
    }
  }
}

package dev.sluice.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.postgres.PostgresStore;
import dev.sluice.redis.RedisStore;
import dev.sluice.spi.DecisionStore;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.time.Duration;
import java.util.Locale;

/**
 * A group's decisions per second on a real store, next to plain keys in the same run: one call
 * per decision either way (a group's touches the key and its parent). Every limit is so large
 * that every call is admitted.
 *
 * <ul>
 *   <li>{@code plain-hot}: the parent's limit as one plain key every caller shares;
 *   <li>{@code plain-keys}: the key's own limits (assured and ceiling) on 100,000 keys;
 *   <li>{@code group-1}: 100,000 keys in one group (one hot parent);
 *   <li>{@code group-1000}: 100,000 keys in 1,000 groups.
 * </ul>
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.GroupLoad
 * redis|postgres [seconds]}; it starts a Redis 6.2 or a PostgreSQL 14 on loopback.
 */
public final class GroupLoad {
  private static final double RATE = 1_000_000d;   // one unit = 1 µs: exact on every store

  private GroupLoad() {}

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "redis";
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    Limit parent = Limit.leakyBucket(RATE, Rate.perSecond(RATE));
    Limit assured = Limit.leakyBucket(RATE / 10, Rate.perSecond(RATE / 10));
    Limit ceiling = Limit.leakyBucket(RATE / 2, Rate.perSecond(RATE / 2));
    redis.embedded.RedisServer redis = null;
    EmbeddedPostgres pg = null;
    HikariDataSource pool = null;
    DecisionStore store;
    int[] callers;
    if (which.equals("redis")) {
      redis = LoadHarness.embeddedRedisUnless(null);
      String uri = LoadHarness.redisUri(null, redis);
      store = RedisStore.builder(uri).commandTimeout(Duration.ofSeconds(5)).build();
      callers = new int[] {1, 16};
      System.out.printf(Locale.ROOT, "redis: %s, %d s per run, %d cores%n", uri, seconds,
          Runtime.getRuntime().availableProcessors());
    } else {
      pg = EmbeddedPostgres.builder().setPort(LoadHarness.freePort()).start();
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(pg.getJdbcUrl("postgres", "postgres"));
      config.setMaximumPoolSize(32);
      config.setMinimumIdle(32);
      pool = new HikariDataSource(config);
      store = PostgresStore.builder(pool).createIfMissing(true)
          .statementTimeout(Duration.ofSeconds(10)).build();
      callers = new int[] {1, 8};
      System.out.printf(Locale.ROOT, "postgres: embedded 14, %d s per run, %d cores%n", seconds,
          Runtime.getRuntime().availableProcessors());
    }
    try {
      RateLimiter hot = Sluice.builder().limit(parent).store(store).build();
      RateLimiter keys = Sluice.builder().limits(assured, ceiling).store(store).build();
      RateLimiter oneGroup = Sluice.builder().group(Group.sharing(parent).assured(assured)
          .ceiling(ceiling)).store(store).build();
      RateLimiter manyGroups = Sluice.builder().group(Group.sharing(parent).assured(assured)
          .ceiling(ceiling).by(key -> key.substring(0, key.indexOf('/')))).store(store).build();
      int n = 100_000;
      String[] names = new String[n];
      String[] grouped = new String[n];
      for (int i = 0; i < n; i++) {
        names[i] = "user:" + i;
        grouped[i] = "g" + (i % 1000) + "/user:" + i;
      }
      LoadHarness.header();
      for (int c : callers) {
        LoadHarness.run("plain-hot", 1, c, seconds, k -> hot.tryAcquire("hot").isAllowed());
        LoadHarness.run("plain-keys", n, c, seconds, k -> keys.tryAcquire(names[k]).isAllowed());
        LoadHarness.run("group-1", n, c, seconds, k -> oneGroup.tryAcquire(names[k]).isAllowed());
        LoadHarness.run("group-1000", n, c, seconds,
            k -> manyGroups.tryAcquire(grouped[k]).isAllowed());
      }
      long errors = hot.stats().storeErrors() + keys.stats().storeErrors()
          + oneGroup.stats().storeErrors() + manyGroups.stats().storeErrors();
      System.out.println("store errors: " + errors);
    } finally {
      store.close();
      if (pool != null) {
        pool.close();
      }
      if (pg != null) {
        pg.close();
      }
      if (redis != null) {
        redis.stop();
      }
    }
  }
}

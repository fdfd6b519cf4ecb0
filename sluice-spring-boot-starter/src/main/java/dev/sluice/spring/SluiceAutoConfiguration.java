package dev.sluice.spring;

import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencySpec;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import dev.sluice.internal.ConcurrencyRuleSettings;
import dev.sluice.micrometer.SluiceMetrics;
import dev.sluice.quota.InMemoryQuotaStore;
import dev.sluice.quota.QuotaStore;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.PrefixedPermitStore;
import dev.sluice.internal.PrefixedStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Sluice's auto-configuration: a {@link SluiceLimiters} with one limiter per policy of
 * {@code sluice.policies}, on the store {@code sluice.store.type} names (by default Redis when
 * {@code sluice-redis} is present and {@code sluice.store.redis.*}, a Lettuce {@code RedisClient}
 * bean or Spring Data Redis says where, PostgreSQL when the application has a {@code DataSource}
 * and {@code sluice-postgres}, else memory); {@link RateLimited} methods;
 * the servlet filter or the WebFlux filter for {@code sluice.rules}; Micrometer meters when
 * there is a {@code MeterRegistry}. {@code sluice.enabled=false} turns it all off.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#everything-else">docs/spring.md, "Everything else"</a>.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.export.prometheus.PrometheusMetricsExportAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnProperty(prefix = "sluice", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(SluiceProperties.class)
@Import({SluiceWebConfigurations.Servlet.class, SluiceWebConfigurations.Reactive.class})
public class SluiceAutoConfiguration {
  private static final Log LOG = LogFactory.getLog(SluiceAutoConfiguration.class);

  /** The limiters of every policy, on the chosen store. */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public SluiceLimiters sluiceLimiters(SluiceProperties properties, ApplicationContext context,
      ObjectProvider<DataSource> dataSource, ObjectProvider<MeterRegistry> registry,
      ObjectProvider<ObservationRegistry> observations) {
    // Check all that does not depend on the store first, so bad settings fail before connecting
    SluiceSettings.of(properties, 0);
    SluiceProperties.Store s = properties.getStore();
    String type = s.getType().trim().toLowerCase(Locale.ROOT);
    ClassLoader loader = context.getClassLoader();
    boolean redisModule = ClassUtils.isPresent("dev.sluice.redis.RedisStore", loader);
    boolean postgresModule = ClassUtils.isPresent("dev.sluice.postgres.PostgresStore", loader);
    boolean mysqlModule = ClassUtils.isPresent("dev.sluice.mysql.MysqlStore", loader);
    boolean redisSettings = s.getRedis().getUri() != null || !s.getRedis().getCluster().isEmpty();
    Object lettuceClient = redisModule ? bean(context, loader, "io.lettuce.core.RedisClient") : null;
    Object springRedis = redisModule && lettuceClient == null ? bean(context, loader,
        "org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory") : null;
    DataSource ds = dataSource.getIfUnique();
    if (type.equals("auto")) {
      type = redisModule && (redisSettings || lettuceClient != null || springRedis != null) ? "redis"
          : ds == null ? "memory"
          : databaseStore(ds, context.getEnvironment(), postgresModule, mysqlModule);
    }
    DecisionStore store = null;
    AutoCloseable resources = null;
    RedisStores.QuotaOpener redisQuotas = null;
    switch (type) {
      case "redis" -> {
        if (!redisModule) {
          throw new SluiceConfigurationException(List.of("sluice.store.type: redis needs"
              + " dev.sluice:sluice-redis on the classpath"));
        }
        RedisStores.Opened o;
        String failure = s.getFailure() == null ? "closed" : s.getFailure().trim();
        if (redisSettings) {
          String tried = s.getRedis().getUri() != null ? redacted(s.getRedis().getUri())
              : String.valueOf(s.getRedis().getCluster());
          try {
            o = RedisStores.fromProperties(s.getRedis(), s.getTimeout());
          } catch (IllegalArgumentException e) {
            throw new SluiceConfigurationException(List.of("sluice.store.redis: " + e.getMessage()));
          } catch (IllegalStateException e) {
            throw new SluiceStoreUnreachableException("Redis at " + tried, failure, e);
          }
        } else if (lettuceClient != null) {
          try {
            o = RedisStores.fromClient(lettuceClient, s.getRedis(), s.getTimeout());
          } catch (SluiceConfigurationException e) {
            throw e;
          } catch (RuntimeException e) {   // Lettuce's RedisException: not named here, as
            // Lettuce is optional and this class is introspected without it
            throw new SluiceStoreUnreachableException("Redis (the application's RedisClient)",
                failure, e);
          }
        } else if (springRedis != null) {
          try {
            o = SpringDataRedis.open(springRedis, s.getRedis(), s.getTimeout());
          } catch (IllegalStateException e) {
            throw new SluiceStoreUnreachableException("Redis (spring.data.redis.*)", failure, e);
          }
        } else {
          throw new SluiceConfigurationException(List.of("sluice.store.redis.uri: is missing:"
              + " set it (or sluice.store.redis.cluster), or configure Spring Data Redis"
              + " (spring.data.redis.*)"));
        }
        store = o.store();
        resources = o.resources();
        redisQuotas = o.quotas();
      }
      case "postgres" -> {
        if (!postgresModule) {
          throw new SluiceConfigurationException(List.of("sluice.store.type: postgres needs"
              + " dev.sluice:sluice-postgres on the classpath"));
        }
        if (ds == null) {
          throw new SluiceConfigurationException(List.of("sluice.store.type: postgres needs one"
              + " DataSource bean (spring.datasource.*)"));
        }
        var pg = PostgresStores.open(ds, s.getPostgres(), s.getTimeout(),
            context.getEnvironment());
        store = pg;
        resources = pg;
      }
      case "mysql" -> {
        if (!mysqlModule) {
          throw new SluiceConfigurationException(List.of("sluice.store.type: mysql needs"
              + " dev.sluice:sluice-mysql on the classpath"));
        }
        if (ds == null) {
          throw new SluiceConfigurationException(List.of("sluice.store.type: mysql needs one"
              + " DataSource bean (spring.datasource.*)"));
        }
        var my = MysqlStores.open(ds, s.getMysql(), s.getTimeout(), context.getEnvironment());
        store = my;
        resources = my;
      }
      default -> { }
    }
    SluiceSettings settings;
    try {
      settings = SluiceSettings.of(properties, store == null ? 1_000_000_000L : store.ticksPerSecond());
    } catch (RuntimeException e) {
      close(resources);
      throw e;
    }
    Quotas quotas = null;
    if (properties.getQuotas().isEnabled()) {
      try {
        quotas = quotas(type, redisQuotas, properties, ds, resources);
      } catch (RuntimeException e) {
        close(resources);
        throw e;
      }
      resources = quotas.resources();
    }
    Quotas q = quotas;
    MeterRegistry meters = registry.getIfUnique();
    ObservationRegistry observed = properties.getObservation().isEnabled()
        ? observations.getIfUnique() : null;
    Map<String, RateLimiter> limiters = new LinkedHashMap<>();
    Map<String, TopKeys> refused = new LinkedHashMap<>();
    for (Map.Entry<String, List<Limit>> e : settings.policies.entrySet()) {
      String name = e.getKey();
      DecisionStore shared = store;
      RateLimiter l = builder(name, e.getValue(), shared, settings, properties).build();
      if (q != null) {   // a key's quota replaces the policy's limits (its own state)
        l = q.quotas().rateLimiter(name, l,
            limits -> builder(name + "#quota", limits, shared, settings, properties).build());
      }
      RecordingLimiter.Recorder recorder = null;
      if (properties.getConsole().isEnabled()) {   // the console's keys refused most
        TopKeys sketch = TopKeys.of(SluiceConsoleEndpoint.TOP_KEYS,
            SluiceConsoleEndpoint.TOP_MEMORY);
        refused.put(name, sketch);
        recorder = RecordingLimiter.Recorder.refusals(sketch);
      }
      if (observed != null) {   // each decision on the current observation
        RecordingLimiter.Recorder o = new ObservationRecorder(observed, name,
            properties.getObservation().isIncludeKeys());
        recorder = recorder == null ? o : recorder.then(o);
      }
      if (recorder != null) {
        l = new RecordingLimiter(l, recorder);
      }
      limiters.put(name, meters == null ? l : SluiceMetrics.monitor(l, name, meters));
    }
    Map<String, ConcurrencyLimiter> concurrency = new LinkedHashMap<>();
    for (ConcurrencySpec spec : settings.concurrency.limits.values()) {
      ConcurrencyLimiter.Builder b = spec.builder();
      if (q != null && spec.adaptive().equals("none") && spec.group() == null
          && spec.limit() > 0) {   // a fixed limit's keys take their quota's limit
        int limit = spec.limit();
        String name = spec.name();
        b.limit(key -> q.quotas().concurrencyLimit(name, key, limit));
      }
      if (store instanceof PermitStore permits) {
        b.store(new PrefixedPermitStore(permits, spec.name())).onStoreFailure(settings.failure)
            .circuitBreaker(settings.breaker);
      }
      ConcurrencyLimiter c = b.build();
      if (meters != null) {
        SluiceMetrics.binder(c, spec.name(), sharedKeys(settings.concurrency, spec.name()))
            .bindTo(meters);
      }
      concurrency.put(spec.name(), c);
    }
    LOG.info("Sluice: " + startupLine(limiters.keySet(), type, store == null ? null
        : String.valueOf(store), settings.rules.size(), properties.isDryRun())
        + (concurrency.isEmpty() ? "" : "; concurrency limits " + concurrency.keySet() + ", "
        + settings.concurrency.rules.size() + " rule" + (settings.concurrency.rules.size() == 1
        ? "" : "s")));
    return new SluiceLimiters(limiters, concurrency, store, type, resources, settings,
        q == null ? null : q.quotas(), q == null ? null : q.store(), refused);
  }

  /** A policy's limiter, on the store (its keys apart: {@code policy/key}) when there is one. */
  private static Sluice.Builder builder(String name, List<Limit> limits, DecisionStore store,
      SluiceSettings settings, SluiceProperties properties) {
    Sluice.Builder b = Sluice.builder().limits(limits.toArray(new Limit[0]));
    if (store == null || settings.failure == StoreFailure.FALLBACK_IN_MEMORY) {
      b.maximumKeys(properties.getMaximumKeys());
    }
    if (store != null) {
      b.store(new PrefixedStore(store, name)).onStoreFailure(settings.failure)
          .circuitBreaker(settings.breaker);
    }
    return b;
  }

  /** The quotas, their store and what closes them with the store. */
  private record Quotas(dev.sluice.quota.Quotas quotas, QuotaStore store,
      AutoCloseable resources) {}

  /**
   * The quotas beside the store (sluice.quotas): in Redis (standalone or Sentinel), PostgreSQL or
   * MySQL, read again every {@code refresh}; in memory with the in-memory store or a Redis
   * Cluster (with a warning: not shared there yet).
   */
  private static Quotas quotas(String type, RedisStores.QuotaOpener redis,
      SluiceProperties properties, DataSource ds, AutoCloseable storeResources) {
    SluiceProperties.Store s = properties.getStore();
    QuotaStore qs;
    AutoCloseable own = null;
    switch (type) {
      case "redis" -> {
        if (redis == null) {
          LOG.warn("Sluice: quotas are kept in this instance's memory: a Redis Cluster does not"
              + " share them yet");
          qs = InMemoryQuotaStore.create();
        } else {
          RedisStores.Quotas opened = redis.open(s.getRedis().getPrefix());
          qs = opened.store();
          own = opened.resources();
        }
      }
      case "postgres" -> qs = PostgresStores.quotas(ds, s.getPostgres());
      case "mysql" -> qs = MysqlStores.quotas(ds, s.getMysql());
      default -> qs = InMemoryQuotaStore.create();
    }
    dev.sluice.quota.Quotas quotas = dev.sluice.quota.Quotas.of(qs)
        .refreshEvery(properties.getQuotas().getRefresh());
    AutoCloseable quotaResources = own;
    return new Quotas(quotas, qs, () -> {
      quotas.close();
      try {
        if (quotaResources != null) {
          quotaResources.close();
        }
      } finally {
        if (storeResources != null) {
          storeResources.close();
        }
      }
    });
  }

  /**
   * The keys of the route and global rules that count against {@code limit}: a bounded set, so
   * each gets its own in-flight and limit gauges (an adaptive limit's value of the moment).
   */
  static String[] sharedKeys(ConcurrencySettings concurrency, String limit) {
    Set<String> keys = new LinkedHashSet<>();
    for (ConcurrencySettings.RuleSpec r : concurrency.rules) {
      String key = ConcurrencyRuleSettings.sharedKey(r.scope(), r.path());
      if (r.limit().equals(limit) && key != null) {
        keys.add(key);
      }
    }
    return keys.toArray(new String[0]);
  }

  /**
   * The health shedder of {@code sluice.health} (docs/health.md), when a signal is named: the
   * filters ask it after the rate rules. A signal is built in by name or a {@link HealthSignal}
   * bean of the application by its {@code name()}; every mistake is named at startup.
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "sluice.health.signals[0]", name = "signal")
  public HealthShedder sluiceHealthShedder(SluiceProperties properties,
      ObjectProvider<HealthSignal> signals, ObjectProvider<MeterRegistry> registry,
      ApplicationContext context) {
    Map<String, HealthSignal> beans = new LinkedHashMap<>();
    signals.orderedStream().forEach(signal -> beans.put(signal.name(), signal));
    HealthShedder shedder = HealthSettings.shedder(properties.getHealth(), beans,
        PoolSignals.of(context));
    MeterRegistry meters = registry.getIfAvailable();
    if (meters != null) {
      HealthSettings.bind(shedder, meters);
    }
    return shedder;
  }

  /** Calls of {@link RateLimited} methods are decided before they run. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  public static RateLimitedPostProcessor sluiceRateLimitedPostProcessor(
      ObjectProvider<SluiceLimiters> limiters) {
    return new RateLimitedPostProcessor(limiters::getObject);
  }

  /** The one bean of the class named, or null when there is none, several, or no such class. */
  /**
   * The store for the application's DataSource, by its database: MySQL or MariaDB with
   * sluice-mysql, else PostgreSQL with sluice-postgres (as before sluice-mysql existed), else
   * memory. The database is the one {@code spring.datasource.url} names or, without it, the one
   * the DataSource's connection says.
   */
  static String databaseStore(DataSource ds, Environment env,
      boolean postgresModule, boolean mysqlModule) {
    if (!mysqlModule) {
      return postgresModule ? "postgres" : "memory";
    }
    String url = env.getProperty("spring.datasource.url");
    boolean mysql;
    if (url != null) {
      mysql = MysqlStores.isMysql(url);
    } else {
      try (Connection c = ds.getConnection()) {
        String product = c.getMetaData().getDatabaseProductName();
        mysql = product != null && (product.contains("MySQL") || product.contains("MariaDB"));
      } catch (SQLException e) {
        // the chosen store's build says what is wrong with the database
        mysql = !postgresModule;
      }
    }
    return mysql ? "mysql" : postgresModule ? "postgres" : "memory";
  }

  private static Object bean(ApplicationContext context, ClassLoader loader, String className) {
    if (!ClassUtils.isPresent(className, loader)) {
      return null;
    }
    try {
      return context.getBeanProvider(ClassUtils.forName(className, loader)).getIfUnique();
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  private static void close(AutoCloseable resources) {
    if (resources != null) {
      try {
        resources.close();
      } catch (Exception ignored) {
        // the configuration error is what matters
      }
    }
  }

  /** The startup log line: "1 policy [api] on the memory store, 2 rules". */
  static String startupLine(Collection<String> policies, String type, String store,
      int rules, boolean dryRun) {
    return count(policies.size(), "policy", "policies") + " " + policies + " on the " + type
        + " store" + (store == null ? "" : " (" + store + ")") + ", "
        + count(rules, "rule", "rules") + (dryRun ? ", dry run" : "");
  }

  private static String count(int n, String one, String many) {
    return n + " " + (n == 1 ? one : many);
  }

  /** A URI without its password. */
  static String redacted(String uri) {
    return uri.replaceAll("(//[^:/@]*:)[^@]*@", "$1****@");
  }
}

package dev.sluice.spring;

import dev.sluice.redis.RedisStore;
import dev.sluice.quota.QuotaStore;
import dev.sluice.redis.RedisQuotaStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.List;

/** The Redis store: from {@code sluice.store.redis.*}, or from Spring Data Redis's settings. */
final class RedisStores {
  private RedisStores() {}

  /**
   * An opened store and what closes it, and how to open the quotas' store beside it (null where
   * quotas cannot be shared yet: a Redis Cluster).
   */
  record Opened(RedisStore store, AutoCloseable resources, QuotaOpener quotas) {}

  /** Opens the quotas' store on a connection of its own, under {@code prefix}. */
  @FunctionalInterface
  interface QuotaOpener {
    Quotas open(String prefix);
  }

  /** The quotas' store and what closes it. */
  record Quotas(QuotaStore store, AutoCloseable resources) {}

  /** Quotas on a client of their own to {@code uri}: the client is closed with them. */
  static QuotaOpener quotasAt(RedisURI uri) {
    return prefix -> {
      RedisClient client = RedisClient.create(uri);
      StatefulRedisConnection<String, String> c;
      try {
        c = client.connect(StringCodec.UTF8);
      } catch (RuntimeException e) {
        client.shutdown();
        throw e;
      }
      return new Quotas(RedisQuotaStore.create(c, prefix + "{quotas}",
          RedisQuotaStore.DEFAULT_MAX_QUOTAS, RedisQuotaStore.DEFAULT_AUDIT_LENGTH), () -> {
            c.close();
            client.shutdown();
          });
    };
  }

  /**
   * The store on the connection the application's Lettuce {@code RedisClient} bean makes to its
   * default URI; the connection is Sluice's to close, the client stays the application's.
   */
  static Opened fromClient(Object clientBean, SluiceProperties.Redis redis, Duration timeout) {
    RedisClient client = (RedisClient) clientBean;
    StatefulRedisConnection<String, String> connection;
    try {
      connection = client.connect(StringCodec.UTF8);
    } catch (IllegalStateException | IllegalArgumentException e) {
      throw new SluiceConfigurationException(List.of("sluice.store.redis.uri: is missing, and the"
          + " application's Lettuce RedisClient has no URI of its own to connect to (" + e.getMessage()
          + "): set sluice.store.redis.uri"));
    }
    connection.setTimeout(timeout);
    try {
      RedisStore store = RedisStore.builder(connection).prefix(redis.getPrefix()).build();
      QuotaOpener quotas = prefix -> {
        StatefulRedisConnection<String, String> c = client.connect(StringCodec.UTF8);
        return new Quotas(RedisQuotaStore.create(c, prefix + "{quotas}",
            RedisQuotaStore.DEFAULT_MAX_QUOTAS, RedisQuotaStore.DEFAULT_AUDIT_LENGTH), c);
      };
      return new Opened(store, () -> {
        store.close();
        connection.close();
      }, quotas);
    } catch (RuntimeException e) {
      connection.close();
      throw e;
    }
  }

  static Opened fromProperties(SluiceProperties.Redis redis, Duration timeout) {
    RedisStore.Builder b = redis.getCluster().isEmpty() ? RedisStore.builder(redis.getUri())
        : RedisStore.clusterBuilder(redis.getCluster().toArray(new String[0]));
    RedisStore store = b.prefix(redis.getPrefix()).commandTimeout(timeout)
        .reconnectDelayCap(redis.getReconnectDelayMax()).build();
    return new Opened(store, store, redis.getCluster().isEmpty()
        ? quotasAt(RedisURI.create(redis.getUri())) : null);
  }

}

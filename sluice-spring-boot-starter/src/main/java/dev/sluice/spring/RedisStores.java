package dev.sluice.spring;

import dev.sluice.redis.RedisStore;
import java.time.Duration;

/** The Redis store: from {@code sluice.store.redis.*}, or from Spring Data Redis's settings. */
final class RedisStores {
  private RedisStores() {}

  /** An opened store and what closes it. */
  record Opened(RedisStore store, AutoCloseable resources) {}

  static Opened fromProperties(SluiceProperties.Redis redis, Duration timeout) {
    RedisStore.Builder b = redis.getCluster().isEmpty() ? RedisStore.builder(redis.getUri())
        : RedisStore.clusterBuilder(redis.getCluster().toArray(new String[0]));
    RedisStore store = b.prefix(redis.getPrefix()).commandTimeout(timeout).build();
    return new Opened(store, store);
  }

}

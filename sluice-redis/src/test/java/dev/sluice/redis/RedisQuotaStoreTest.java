package dev.sluice.redis;

import dev.sluice.quota.QuotaStore;
import dev.sluice.testkit.QuotaStoreSuite;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;

/** Quotas in a real Redis: the quota store suite, each store object on its own connection. */
class RedisQuotaStoreTest extends QuotaStoreSuite {
  private final String prefix = "test:" + UUID.randomUUID() + ":{quotas}";
  private final RedisClient client = RedisClient.create(TestRedis.uri());
  private final List<StatefulRedisConnection<String, String>> connections = new ArrayList<>();

  @Override
  protected QuotaStore store(int maxQuotas, int auditLength) {
    StatefulRedisConnection<String, String> c = client.connect();
    connections.add(c);
    return RedisQuotaStore.create(c, prefix, maxQuotas, auditLength);
  }

  @AfterEach
  void close() {
    connections.forEach(StatefulRedisConnection::close);
    client.shutdown();
  }
}

package dev.sluice.redis;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.FleetSuite;
import java.time.Duration;

/** Fleet mode: eight instances, each with its own connection, on one real Redis. */
class RedisFleetTest extends FleetSuite {
  @Override
  protected DecisionStore newStore(String prefix) {
    return RedisStore.builder(TestRedis.uri()).prefix(prefix)
        .commandTimeout(Duration.ofSeconds(2)).build();
  }

  @Override
  protected boolean expires(DecisionStore store, String key) {
    return TestRedis.connection().sync().pttl(((RedisStore) store).stateKey(key)) != -1;
  }
}

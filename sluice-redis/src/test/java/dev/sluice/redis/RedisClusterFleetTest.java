package dev.sluice.redis;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.FleetSuite;
import java.time.Duration;

/** Fleet mode: eight instances, each with its own cluster client, on a real Redis Cluster. */
class RedisClusterFleetTest extends FleetSuite {
  @Override
  protected DecisionStore newStore(String prefix) {
    return RedisStore.clusterBuilder(TestCluster.seeds().toArray(new String[0])).prefix(prefix)
        .commandTimeout(Duration.ofSeconds(2)).build();
  }

  @Override
  protected boolean expires(DecisionStore store, String key) {
    return TestCluster.connection().sync().pttl(((RedisStore) store).stateKey(key)) != -1;
  }
}

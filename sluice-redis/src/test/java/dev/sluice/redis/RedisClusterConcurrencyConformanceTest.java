package dev.sluice.redis;

import dev.sluice.testkit.ConcurrencyConformanceSuite;
import dev.sluice.testkit.PermitStoreFactory;
import java.util.UUID;

/** Permits on a real three-master Redis Cluster pass the concurrency conformance suite. */
class RedisClusterConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> RedisClusterConformanceTest.store("c:" + UUID.randomUUID() + ":", clock);
  }
}

package dev.sluice.redis;

import dev.sluice.testkit.ConcurrencyConformanceSuite;
import dev.sluice.testkit.PermitStoreFactory;
import java.util.UUID;

/** Permits on Redis pass the whole concurrency conformance suite against a real Redis. */
class RedisConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> RedisFactory.store("test:" + UUID.randomUUID() + ":", clock);
  }
}

package dev.sluice.redis;

import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;

/** The Redis store passes the whole conformance suite against a real Redis. */
class RedisConformanceTest extends ConformanceSuite {
  @Override
  protected LimiterFactory factory() {
    return new RedisFactory();
  }
}

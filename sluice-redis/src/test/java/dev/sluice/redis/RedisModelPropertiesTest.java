package dev.sluice.redis;

import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ModelProperties;

/** The Redis store agrees with the reference model, decision by decision, at microsecond ticks. */
class RedisModelPropertiesTest extends ModelProperties {
  @Override
  protected LimiterFactory factory() {
    return new RedisFactory();
  }
}

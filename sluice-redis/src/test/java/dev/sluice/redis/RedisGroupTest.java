package dev.sluice.redis;

import dev.sluice.testkit.GroupSuite;
import dev.sluice.testkit.LimiterFactory;

/** The group suite on a real Redis: one script call per decision, on the key and its group. */
class RedisGroupTest extends GroupSuite {
  @Override
  protected LimiterFactory factory() {
    return new RedisFactory();
  }
}

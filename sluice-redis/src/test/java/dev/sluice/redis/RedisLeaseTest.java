package dev.sluice.redis;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.LeaseAccountingSuite;
import java.util.UUID;
import java.util.function.LongSupplier;

/** Leases in decide.lua add up exactly under contention. */
class RedisLeaseTest extends LeaseAccountingSuite {
  @Override
  protected DecisionStore store(LongSupplier micros) {
    return RedisStore.builder(TestRedis.connection()).prefix("lease:" + UUID.randomUUID() + ":")
        .timeSourceMicros(micros).build();
  }
}

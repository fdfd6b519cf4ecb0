package dev.sluice.postgres;

import dev.sluice.testkit.ConcurrencyConformanceSuite;
import dev.sluice.testkit.PermitStoreFactory;
import java.util.UUID;

/** Permits on PostgreSQL pass the whole concurrency conformance suite against a real server. */
class PostgresConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> PostgresFactory.store("test:" + UUID.randomUUID() + ":", clock);
  }
}

package dev.sluice.mysql;

import dev.sluice.testkit.ConcurrencyConformanceSuite;
import dev.sluice.testkit.PermitStoreFactory;
import java.util.UUID;

/** Permits on MySQL pass the whole concurrency conformance suite against a real server. */
class MysqlConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> MysqlFactory.store("test:" + UUID.randomUUID() + ":", clock);
  }
}

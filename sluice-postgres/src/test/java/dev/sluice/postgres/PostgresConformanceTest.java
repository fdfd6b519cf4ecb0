package dev.sluice.postgres;

import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;

/** The PostgreSQL store passes the whole conformance suite against a real PostgreSQL. */
class PostgresConformanceTest extends ConformanceSuite {
  @Override
  protected LimiterFactory factory() {
    return new PostgresFactory();
  }
}

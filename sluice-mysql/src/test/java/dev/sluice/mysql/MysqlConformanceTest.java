package dev.sluice.mysql;

import dev.sluice.testkit.ConformanceSuite;
import dev.sluice.testkit.LimiterFactory;

/** The MySQL store passes the whole conformance suite against a real MariaDB. */
class MysqlConformanceTest extends ConformanceSuite {
  @Override
  protected LimiterFactory factory() {
    return new MysqlFactory();
  }
}

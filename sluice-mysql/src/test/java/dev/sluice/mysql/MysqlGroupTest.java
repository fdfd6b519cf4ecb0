package dev.sluice.mysql;

import dev.sluice.testkit.GroupSuite;
import dev.sluice.testkit.LimiterFactory;

/** The group suite on a real MariaDB: one procedure call per decision, on the key and its group. */
class MysqlGroupTest extends GroupSuite {
  @Override
  protected LimiterFactory factory() {
    return new MysqlFactory();
  }
}

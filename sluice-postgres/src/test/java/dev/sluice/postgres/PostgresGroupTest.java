package dev.sluice.postgres;

import dev.sluice.testkit.GroupSuite;
import dev.sluice.testkit.LimiterFactory;

/** The group suite on a real PostgreSQL: one function call per decision, on the key and its group. */
class PostgresGroupTest extends GroupSuite {
  @Override
  protected LimiterFactory factory() {
    return new PostgresFactory();
  }
}

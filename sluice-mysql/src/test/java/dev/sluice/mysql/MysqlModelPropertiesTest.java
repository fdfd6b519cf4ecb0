package dev.sluice.mysql;

import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ModelProperties;

/** The MySQL store agrees with the reference model, decision by decision, at microsecond ticks. */
class MysqlModelPropertiesTest extends ModelProperties {
  @Override
  protected LimiterFactory factory() {
    return new MysqlFactory();
  }
}

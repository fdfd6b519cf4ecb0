package dev.sluice.postgres;

import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ModelProperties;

/** The PostgreSQL store agrees with the reference model, decision by decision, at microsecond ticks. */
class PostgresModelPropertiesTest extends ModelProperties {
  @Override
  protected LimiterFactory factory() {
    return new PostgresFactory();
  }
}

package dev.sluice.mysql;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.LeaseAccountingSuite;
import java.util.UUID;
import java.util.function.LongSupplier;

/** Leases in the stored procedure add up exactly under contention. */
class MysqlLeaseTest extends LeaseAccountingSuite {
  @Override
  protected DecisionStore store(LongSupplier micros) {
    return MysqlStore.builder(TestMysql.dataSource()).createIfMissing(true)
        .prefix("lease:" + UUID.randomUUID() + ":").timeSourceMicros(micros).build();
  }
}

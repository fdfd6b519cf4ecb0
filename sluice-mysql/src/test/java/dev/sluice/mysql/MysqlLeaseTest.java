package dev.sluice.mysql;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.LeaseAccountingSuite;
import java.time.Duration;
import java.util.UUID;
import java.util.function.LongSupplier;

/** Leases in the stored procedure add up exactly under contention. */
class MysqlLeaseTest extends LeaseAccountingSuite {
  @Override
  protected DecisionStore store(LongSupplier micros) {
    return MysqlStore.builder(TestMysql.dataSource()).createIfMissing(true)
        .prefix("lease:" + UUID.randomUUID() + ":").timeSourceMicros(micros)
        // 16 threads queue on one key: this tests the accounting, not the store's timeout, and a
        // busy host can hold a call behind the others past the default 200 ms
        .statementTimeout(Duration.ofSeconds(10)).build();
  }
}

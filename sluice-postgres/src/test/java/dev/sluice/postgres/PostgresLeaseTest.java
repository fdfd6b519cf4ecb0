package dev.sluice.postgres;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.LeaseAccountingSuite;
import java.util.UUID;
import java.util.function.LongSupplier;

/** Leases in the SQL function add up exactly under contention. */
class PostgresLeaseTest extends LeaseAccountingSuite {
  @Override
  protected DecisionStore store(LongSupplier micros) {
    return PostgresStore.builder(TestPostgres.dataSource()).createIfMissing(true)
        .prefix("lease:" + UUID.randomUUID() + ":").timeSourceMicros(micros).build();
  }
}

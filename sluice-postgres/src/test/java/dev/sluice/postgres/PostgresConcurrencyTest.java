package dev.sluice.postgres;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.FrozenClockContentionSuite;
import java.time.Duration;
import java.util.function.LongSupplier;

/** 16 threads on one hot key, on 100 new keys and with two limits on one key, on a real PostgreSQL. */
class PostgresConcurrencyTest extends FrozenClockContentionSuite {
  @Override
  protected DecisionStore store(String prefix, LongSupplier micros) {
    return PostgresStore.builder(TestPostgres.dataSource()).createIfMissing(true).prefix(prefix)
        .timeSourceMicros(micros).statementTimeout(Duration.ofSeconds(10)).build();
  }
}

package dev.sluice.postgres;

import dev.sluice.spi.PermitStore;
import dev.sluice.testkit.PruningSuite;
import javax.sql.DataSource;

/** The testkit's pruning suite on PostgreSQL (or the external server TestPostgres names). */
class PostgresPruneTest extends PruningSuite<PostgresStore> {
  @Override
  protected PostgresStore open(Settings settings) {
    PostgresStore.Builder builder = PostgresStore.builder(TestPostgres.dataSource()).table(settings.table())
        .createIfMissing(settings.create()).prefix(settings.prefix())
        .timeSourceMicros(settings.micros());
    if (settings.pruneBatch() > 0) {
      builder.pruneBatchSize(settings.pruneBatch());
    }
    if (settings.timeout() != null) {
      builder.statementTimeout(settings.timeout());
    }
    if (settings.pruneEvery() != null) {
      builder.pruneEvery(settings.pruneEvery());
    }
    return builder.build();
  }

  @Override
  protected long pruneExpired(PostgresStore store) {
    return store.pruneExpired();
  }

  @Override
  protected long prunedRows(PostgresStore store) {
    return store.prunedRows();
  }

  @Override
  protected PermitStore permits(PostgresStore store) {
    return store;
  }

  @Override
  protected DataSource dataSource() {
    return TestPostgres.dataSource();
  }

  @Override
  protected String keyColumn() {
    return "key";
  }
}

package dev.sluice.mysql;

import dev.sluice.spi.PermitStore;
import dev.sluice.testkit.PruningSuite;
import javax.sql.DataSource;

/** The testkit's pruning suite on MariaDB (or the external server TestMysql names). */
class MysqlPruneTest extends PruningSuite<MysqlStore> {
  @Override
  protected MysqlStore open(Settings settings) {
    MysqlStore.Builder builder = MysqlStore.builder(TestMysql.dataSource()).table(settings.table())
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
  protected long pruneExpired(MysqlStore store) {
    return store.pruneExpired();
  }

  @Override
  protected long prunedRows(MysqlStore store) {
    return store.prunedRows();
  }

  @Override
  protected PermitStore permits(MysqlStore store) {
    return store;
  }

  @Override
  protected DataSource dataSource() {
    return TestMysql.dataSource();
  }

  @Override
  protected String keyColumn() {
    return "k";
  }
}

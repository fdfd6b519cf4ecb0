package dev.sluice.spring;

import dev.sluice.postgres.PostgresStore;
import java.time.Duration;
import javax.sql.DataSource;

/** The PostgreSQL store on the application's {@code DataSource}. */
final class PostgresStores {
  private PostgresStores() {}

  static PostgresStore open(DataSource dataSource, SluiceProperties.Postgres pg, Duration timeout) {
    return PostgresStore.builder(dataSource).table(pg.getTable())
        .createIfMissing(pg.isCreateSchema()).statementTimeout(timeout)
        .pruneEvery(pg.getPruneEvery()).build();
  }
}

package dev.sluice.spring;

import dev.sluice.jdbc.store.JdbcQuotaStore;
import dev.sluice.postgres.PostgresStore;
import dev.sluice.quota.QuotaStore;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.core.env.Environment;

/** The PostgreSQL store on the application's {@code DataSource}. */
final class PostgresStores {
  private PostgresStores() {}

  static PostgresStore open(DataSource dataSource, SluiceProperties.Postgres pg, Duration timeout,
      Environment env) {
    PostgresStore.Builder b = PostgresStore.builder(dataSource).table(pg.getTable())
        .createIfMissing(pg.isCreateSchema()).statementTimeout(timeout)
        .pruneEvery(pg.getPruneEvery());
    DataSource direct = direct(env);
    if (direct != null) {
      b.recoveryDataSource(direct);
    }
    return b.build();
  }

  /**
   * Connections of the store's own to the database {@code spring.datasource.*} names, one per
   * call, for decisions while the application's pool waits out its back-off after an outage
   * (HikariCP: up to 5 s); null when the URL is not a PostgreSQL one (a DataSource of the
   * application's own making: then recovery waits for its pool).
   */
  /** The quotas' tables beside the store's ({@code <table>_quotas} and the rest). */
  static QuotaStore quotas(DataSource dataSource, SluiceProperties.Postgres pg) {
    return JdbcQuotaStore.create(dataSource, pg.getTable());
  }

  static DataSource direct(Environment env) {
    String url = env.getProperty("spring.datasource.url");
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      return null;
    }
    String user = env.getProperty("spring.datasource.username");
    String password = env.getProperty("spring.datasource.password");
    return new DirectDataSource(url, user, password, "connectTimeout", "1");   // seconds
  }
}

package dev.sluice.spring;

import dev.sluice.jdbc.store.JdbcQuotaStore;
import dev.sluice.mysql.MysqlStore;
import dev.sluice.quota.QuotaStore;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.core.env.Environment;

/** The MySQL / MariaDB store on the application's {@code DataSource}. */
final class MysqlStores {
  private MysqlStores() {}

  static MysqlStore open(DataSource dataSource, SluiceProperties.Mysql my, Duration timeout,
      Environment env) {
    MysqlStore.Builder b = MysqlStore.builder(dataSource).table(my.getTable())
        .createIfMissing(my.isCreateSchema()).statementTimeout(timeout)
        .pruneEvery(my.getPruneEvery());
    DataSource direct = direct(env);
    if (direct != null) {
      b.recoveryDataSource(direct);
    }
    return b.build();
  }

  /** Whether a JDBC URL names MySQL or MariaDB. */
  /** The quotas' tables beside the store's ({@code <table>_quotas} and the rest). */
  static QuotaStore quotas(DataSource dataSource, SluiceProperties.Mysql my) {
    return JdbcQuotaStore.create(dataSource, my.getTable());
  }

  static boolean isMysql(String url) {
    return url != null && (url.startsWith("jdbc:mysql:") || url.startsWith("jdbc:mariadb:"));
  }

  /**
   * Connections of the store's own to the database {@code spring.datasource.*} names, one per
   * call, for decisions while the application's pool waits out its back-off after an outage;
   * null when the URL is not a MySQL or MariaDB one.
   */
  static DataSource direct(Environment env) {
    String url = env.getProperty("spring.datasource.url");
    if (!isMysql(url)) {
      return null;
    }
    return new DirectDataSource(url, env.getProperty("spring.datasource.username"),
        env.getProperty("spring.datasource.password"), "connectTimeout", "1000");   // ms
  }
}

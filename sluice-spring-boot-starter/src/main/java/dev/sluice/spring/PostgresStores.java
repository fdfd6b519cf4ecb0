package dev.sluice.spring;

import dev.sluice.postgres.PostgresStore;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import java.util.logging.Logger;
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
  static DataSource direct(Environment env) {
    String url = env.getProperty("spring.datasource.url");
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      return null;
    }
    String user = env.getProperty("spring.datasource.username");
    String password = env.getProperty("spring.datasource.password");
    return new DirectDataSource(url, user, password);
  }

  /** DriverManager connections, a new one per call (connect timeout 1 s). */
  static final class DirectDataSource implements DataSource {
    private final String url;
    private final Properties info = new Properties();

    DirectDataSource(String url, String user, String password) {
      this.url = url;
      if (user != null) {
        info.setProperty("user", user);
      }
      if (password != null) {
        info.setProperty("password", password);
      }
      info.setProperty("connectTimeout", "1");
    }

    @Override
    public Connection getConnection() throws SQLException {
      return DriverManager.getConnection(url, info);
    }

    @Override
    public Connection getConnection(String user, String password)
        throws SQLException {
      Properties p = new Properties();
      p.putAll(info);
      p.setProperty("user", user);
      p.setProperty("password", password);
      return DriverManager.getConnection(url, p);
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 1;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
      return false;
    }

    @Override
    public String toString() {
      return "direct connections to " + url.replaceAll("password=[^&]*", "password=***");
    }
  }
}

package dev.sluice.spring;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * DriverManager connections to the database {@code spring.datasource.*} names, a new one per call,
 * with a short connect timeout: a JDBC store's recovery connections while the application's pool
 * waits out its back-off after an outage.
 */
final class DirectDataSource implements DataSource {
  private final String url;
  private final Properties info = new Properties();

  /** {@code timeoutProperty} and {@code timeout}: the driver's connect timeout, in its unit. */
  DirectDataSource(String url, String user, String password, String timeoutProperty,
      String timeout) {
    this.url = url;
    if (user != null) {
      info.setProperty("user", user);
    }
    if (password != null) {
      info.setProperty("password", password);
    }
    info.setProperty(timeoutProperty, timeout);
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

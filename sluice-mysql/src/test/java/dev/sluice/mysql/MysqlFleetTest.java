package dev.sluice.mysql;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.FleetSuite;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/** Fleet mode: eight instances, each with its own connection pool, on one real MariaDB. */
class MysqlFleetTest extends FleetSuite {
  private String prefix;

  @Override
  protected DecisionStore newStore(String prefix) {
    this.prefix = prefix;
    // a generous timeout, as the Redis suites give theirs: 8 pools and their callers share 2
    // cores with the database, and this suite counts store errors
    return MysqlStore.builder(TestMysql.pool(TestMysql.url(), 2)).createIfMissing(true)
        .statementTimeout(java.time.Duration.ofSeconds(5)).prefix(prefix).build();
  }

  /**
   * The row is gone, or expires within two seconds: a full bucket drains in 0.1 s, and the
   * procedure sets the expiry to the instant it is empty.
   */
  @Override
  protected boolean expires(DecisionStore store, String key) {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement s = c.prepareStatement("SELECT count(*) FROM sluice_buckets WHERE k = ?"
            + " AND expires_at > sluice_my1_now() + 2000000")) {
      s.setString(1, prefix + key);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1) == 0;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}

package dev.sluice.jdbc.store;

import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaCodec;
import dev.sluice.quota.QuotaStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Quotas in PostgreSQL or MySQL / MariaDB, beside the counters, on plain JDBC: three tables,
 * {@code <table>_quotas} (a quota a row, keyed by a SHA-256 of its target),
 * {@code <table>_quota_version} (one row) and {@code <table>_quota_audit} (the newest
 * {@code auditLength} changes), made at {@link #create} when missing. Each change is one
 * transaction that locks the version row first, so changes are serial, and dates the change on
 * the database's clock. Every instance's {@link dev.sluice.quota.Quotas} polls the version (one
 * row read) and reads the quotas again when it moved.
 *
 * <pre>{@code
 * Quotas quotas = Quotas.of(JdbcQuotaStore.create(dataSource, "sluice_buckets"))
 *     .refreshEvery(Duration.ofMillis(500));
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md#in-postgresql-and-mysql--mariadb">docs/quotas.md, "In PostgreSQL and MySQL / MariaDB"</a>.
 */
public final class JdbcQuotaStore implements QuotaStore {
  /** Quotas held at most by default. */
  public static final int DEFAULT_MAX_QUOTAS = 100_000;
  /** Changes the audit trail keeps by default. */
  public static final int DEFAULT_AUDIT_LENGTH = 10_000;
  private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,40}");

  private final DataSource dataSource;
  private final String quotas;
  private final String version;
  private final String audit;
  private final int maxQuotas;
  private final int auditLength;

  private JdbcQuotaStore(DataSource dataSource, String table, int maxQuotas, int auditLength) {
    this.dataSource = dataSource;
    this.quotas = table + "_quotas";
    this.version = table + "_quota_version";
    this.audit = table + "_quota_audit";
    this.maxQuotas = maxQuotas;
    this.auditLength = auditLength;
  }

  /** Quotas beside the store's {@code table} (the same name its counters use), default bounds. */
  public static JdbcQuotaStore create(DataSource dataSource, String table) {
    return create(dataSource, table, DEFAULT_MAX_QUOTAS, DEFAULT_AUDIT_LENGTH);
  }

  /**
   * Quotas beside {@code table}, at most {@code maxQuotas}, the newest {@code auditLength}
   * changes kept; makes the tables when missing.
   *
   * @throws IllegalArgumentException naming the value if the table name or a bound is not one
   * @throws IllegalStateException if the tables cannot be made, with the database's reason
   */
  public static JdbcQuotaStore create(DataSource dataSource, String table, int maxQuotas,
      int auditLength) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(table, "table");
    if (!TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException("a table name must be a letter or _ then up to 40 of"
          + " A-Z a-z 0-9 _ but was '" + table + "'");
    }
    if (maxQuotas < 1) {
      throw new IllegalArgumentException("maxQuotas must be at least 1 but was " + maxQuotas);
    }
    if (auditLength < 1) {
      throw new IllegalArgumentException("auditLength must be at least 1 but was "
          + auditLength);
    }
    JdbcQuotaStore s = new JdbcQuotaStore(dataSource, table, maxQuotas, auditLength);
    s.makeTables();
    return s;
  }

  private void makeTables() {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS " + quotas + " (target_hash CHAR(64) PRIMARY KEY,"
          + " line TEXT NOT NULL)");
      st.execute("CREATE TABLE IF NOT EXISTS " + version + " (id INT PRIMARY KEY,"
          + " version BIGINT NOT NULL)");
      st.execute("CREATE TABLE IF NOT EXISTS " + audit + " (version BIGINT PRIMARY KEY,"
          + " at_ms BIGINT NOT NULL, line TEXT NOT NULL)");
      try (ResultSet r = st.executeQuery("SELECT COUNT(*) FROM " + version)) {
        r.next();
        if (r.getLong(1) == 0) {
          try {
            st.execute("INSERT INTO " + version + " (id, version) VALUES (1, 0)");
          } catch (SQLException e) {
            if (e.getSQLState() == null || !e.getSQLState().startsWith("23")) {
              throw e;   // not another instance's row of a moment ago
            }
          }
        }
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("the quota tables cannot be made: " + e.getMessage(), e);
    }
  }

  private static String hash(String target) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(target.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java platform", e);
    }
  }

  @Override
  public long version() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT version FROM " + version
            + " WHERE id = 1");
        ResultSet r = p.executeQuery()) {
      return r.next() ? r.getLong(1) : 0;
    } catch (SQLException e) {
      throw new IllegalStateException("the quota version cannot be read: " + e.getMessage(), e);
    }
  }

  @Override
  public Snapshot read() {
    try (Connection c = dataSource.getConnection()) {
      boolean auto = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        long v;
        try (PreparedStatement p = c.prepareStatement("SELECT version FROM " + version
            + " WHERE id = 1"); ResultSet r = p.executeQuery()) {
          v = r.next() ? r.getLong(1) : 0;
        }
        List<Quota> out = new ArrayList<>();
        try (PreparedStatement p = c.prepareStatement("SELECT line FROM " + quotas);
            ResultSet r = p.executeQuery()) {
          while (r.next()) {
            out.add(QuotaCodec.decode(r.getString(1)));
          }
        }
        c.commit();
        return new Snapshot(v, out);
      } finally {
        c.setAutoCommit(auto);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("the quotas cannot be read: " + e.getMessage(), e);
    }
  }

  @Override
  public long put(Quota quota, String who) {
    Objects.requireNonNull(quota, "quota");
    return change(QuotaCodec.target(quota.policy(), quota.key(), quota.prefix()), quota,
        Objects.requireNonNull(who, "who"), quota.reason());
  }

  @Override
  public long remove(String policy, String key, boolean prefix, String who, String reason) {
    return change(QuotaCodec.target(policy, key, prefix), null,
        Objects.requireNonNull(who, "who"), Objects.requireNonNull(reason, "reason"));
  }

  /** One transaction: the version row locked, the quota set or removed, the change recorded. */
  private long change(String target, Quota after, String who, String reason) {
    String h = hash(target);
    try (Connection c = dataSource.getConnection()) {
      boolean auto = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        long v;
        try (PreparedStatement p = c.prepareStatement("SELECT version FROM " + version
            + " WHERE id = 1 FOR UPDATE"); ResultSet r = p.executeQuery()) {
          r.next();
          v = r.getLong(1);
        }
        String before = null;
        try (PreparedStatement p = c.prepareStatement("SELECT line FROM " + quotas
            + " WHERE target_hash = ?")) {
          p.setString(1, h);
          try (ResultSet r = p.executeQuery()) {
            before = r.next() ? r.getString(1) : null;
          }
        }
        if (after == null && before == null) {
          c.commit();
          return v;   // nothing to remove
        }
        if (after != null && before == null) {
          try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) FROM " + quotas);
              ResultSet r = p.executeQuery()) {
            r.next();
            if (r.getLong(1) >= maxQuotas) {
              c.rollback();
              throw new IllegalStateException("the store holds its most quotas (" + maxQuotas
                  + "): remove one first");
            }
          }
        }
        if (before != null) {
          try (PreparedStatement p = c.prepareStatement("DELETE FROM " + quotas
              + " WHERE target_hash = ?")) {
            p.setString(1, h);
            p.executeUpdate();
          }
        }
        String line = after == null ? null : QuotaCodec.encode(after);
        if (after != null) {
          try (PreparedStatement p = c.prepareStatement("INSERT INTO " + quotas
              + " (target_hash, line) VALUES (?, ?)")) {
            p.setString(1, h);
            p.setString(2, line);
            p.executeUpdate();
          }
        }
        Instant at;
        try (PreparedStatement p = c.prepareStatement("SELECT CURRENT_TIMESTAMP");
            ResultSet r = p.executeQuery()) {
          r.next();
          at = r.getTimestamp(1).toInstant();
        }
        long next = v + 1;
        try (PreparedStatement p = c.prepareStatement("UPDATE " + version
            + " SET version = ? WHERE id = 1")) {
          p.setLong(1, next);
          p.executeUpdate();
        }
        QuotaChange change = new QuotaChange(next, at, who,
            before == null ? null : QuotaCodec.decode(before), after, reason);
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + audit
            + " (version, at_ms, line) VALUES (?, ?, ?)")) {
          p.setLong(1, next);
          p.setLong(2, at.toEpochMilli());
          p.setString(3, QuotaCodec.encode(change));
          p.executeUpdate();
        }
        try (PreparedStatement p = c.prepareStatement("DELETE FROM " + audit
            + " WHERE version <= ?")) {
          p.setLong(1, next - auditLength);
          p.executeUpdate();
        }
        c.commit();
        return next;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(auto);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("the quota cannot be changed: " + e.getMessage(), e);
    }
  }

  @Override
  public List<QuotaChange> audit(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be zero or more but was " + n);
    }
    List<QuotaChange> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT line FROM " + audit
            + " ORDER BY version DESC")) {
      p.setMaxRows(n);
      try (ResultSet r = p.executeQuery()) {
        while (r.next() && out.size() < n) {
          out.add(QuotaCodec.decodeChange(r.getString(1)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException("the audit trail cannot be read: " + e.getMessage(), e);
    }
  }
}

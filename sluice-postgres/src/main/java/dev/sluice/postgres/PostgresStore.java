package dev.sluice.postgres;

import dev.sluice.jdbc.DeadlineConnections;
import dev.sluice.jdbc.store.JdbcStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.StoreRequest;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;

/**
 * Per-key limits shared through PostgreSQL: each decision is one statement and one round trip,
 * computed in the database on {@code clock_timestamp()} by the function the schema installs.
 *
 * <pre>{@code
 * PostgresStore store = PostgresStore.builder(dataSource).createIfMissing(true).build();
 * RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1))).store(store).build();
 * }</pre>
 *
 * <p>Takes connections from the given {@link DataSource} (any pool) for one statement at a time
 * and never closes the DataSource. Thread-safe. What it shares with the other SQL store
 * (timeouts, queues, permits, pruning, fleets) is {@link JdbcStore}'s.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#postgresql-sluice-postgres">docs/operations.md, "PostgreSQL (sluice-postgres)"</a>.
 */
public final class PostgresStore extends JdbcStore {
  /** The schema version this store needs; the table's comment says which one it has. */
  public static final int SCHEMA_VERSION = 9;
  /** The first schema file shipped in the jar, for Flyway, Liquibase or psql. */
  public static final String SCHEMA_RESOURCE = "/dev/sluice/postgres/V1__sluice.sql";
  /**
   * The schema files in the order to apply them; file {@code i} takes a table from version
   * {@code i} to {@code i + 1}.
   */
  public static final List<String> SCHEMA_RESOURCES =
      List.of(SCHEMA_RESOURCE, "/dev/sluice/postgres/V2__sluice.sql",
          "/dev/sluice/postgres/V3__sluice.sql", "/dev/sluice/postgres/V4__sluice.sql",
          "/dev/sluice/postgres/V5__sluice.sql", "/dev/sluice/postgres/V6__sluice.sql",
          "/dev/sluice/postgres/V7__sluice.sql", "/dev/sluice/postgres/V8__sluice.sql",
          "/dev/sluice/postgres/V9__sluice.sql");
  /**
   * The schema at {@link #SCHEMA_VERSION} in one file, for a fresh install: what the files of
   * {@link #SCHEMA_RESOURCES} leave, each function in its newest form only.
   */
  public static final String BASELINE_RESOURCE = "/dev/sluice/postgres/B9__sluice.sql";

  private static final int SERIALIZATION_RETRIES = 5;
  private final String decideSql;
  private final String decideGroupSql;
  private final String permitSql;
  private final String groupPermitSql;
  private final String liveSql;
  private final String[] deleteSql = new String[Rows.values().length];

  private PostgresStore(Builder b) {
    super(b, "PostgreSQL", "postgres", Pruning::statements, Pruning.READ_COMMITTED);
    String table = table();
    this.decideSql = "SELECT " + table + "_decide(?, ?, ?, ?, ?::bigint[], ?)";
    this.decideGroupSql = "SELECT " + table + "_decide_group(?, ?, ?, ?, ?, ?::bigint[], ?)";
    this.permitSql = "SELECT " + table + "_permit(?, ?, ?, ?, ?, ?, ?)";
    this.groupPermitSql = "SELECT " + table + "_group_permit(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.liveSql = "SELECT " + table + "_live_instances(?, ?, ?, ?)";
    deleteSql[Rows.BUCKET.ordinal()] = "DELETE FROM " + table + " WHERE key = ?";
    deleteSql[Rows.GROUP_MEMBER.ordinal()] =
        "DELETE FROM " + table + "_groups WHERE grp = ? AND key = ?";
    deleteSql[Rows.PERMITS.ordinal()] = "DELETE FROM " + table + "_permits WHERE key = ?";
    deleteSql[Rows.GROUP_PERMITS.ordinal()] =
        "DELETE FROM " + table + "_group_permits WHERE grp = ?";
    deleteSql[Rows.GROUP_MEMBER_PERMITS.ordinal()] =
        "DELETE FROM " + table + "_group_permits WHERE grp = ? AND key = ?";
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The schema's SQL for {@code table}, as a fresh install runs it ({@link #BASELINE_RESOURCE}
   * with the name replaced), optionally creating the table {@code UNLOGGED}. Idempotent.
   *
   * @throws IllegalArgumentException if {@code table} is not a plain lower-case identifier
   */
  public static String schemaSql(String table, boolean unlogged) {
    return PostgresSchema.sql(table, unlogged);
  }

  /**
   * One call of the function {@code <table>_decide} (a group's: {@code <table>_decide_group},
   * which locks the group's parent row and then the key's, in {@code <table>_groups}), whose
   * row-lock wait PostgreSQL ends when the time left runs out. A serialization failure or a
   * deadlock rolled the statement back entirely, so it is decided again; anything else (a
   * timeout, a lost connection) may have committed and is never replayed.
   */
  @Override
  protected Observation decide(String stateKey, String member, StoreRequest request,
      long deadline) {
    String args = "{" + arguments(request) + "}";
    SQLException last = null;
    for (int attempt = 0; attempt < SERIALIZATION_RETRIES; attempt++) {
      try (Connection c = connection(deadline)) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        long leftMillis = millisLeft(deadline);
        try (PreparedStatement p = c.prepareStatement(member == null ? decideSql : decideGroupSql)) {
          DeadlineConnections.timeout(p, leftMillis);
          int at = 1;
          p.setString(at++, stateKey);
          if (member != null) {
            p.setString(at++, member);
          }
          p.setInt(at++, request.operation().code());
          bindTime(p, at++);
          p.setString(at++, request.layout());
          p.setString(at++, args);
          p.setInt(at, (int) Math.min(Integer.MAX_VALUE, leftMillis));
          try (ResultSet rs = p.executeQuery()) {
            rs.next();
            return observation(rs.getArray(1));
          }
        }
      } catch (SQLException e) {
        String state = e.getSQLState();
        if (!"40001".equals(state) && !"40P01".equals(state)) {
          throw callFailure("decision", e);
        }
        last = e;
      }
    }
    throw failure("PostgreSQL decision on table " + table() + " failed " + SERIALIZATION_RETRIES
        + " times with a serialization failure", last);
  }

  /** Reads {@code {now, slot, ...}} from a SQL {@code bigint[]}. */
  static Observation observation(Array array) throws SQLException {
    Object[] values = (Object[]) array.getArray();
    long[] state = new long[values.length - 1];
    for (int i = 0; i < state.length; i++) {
      state[i] = ((Number) values[i + 1]).longValue();
    }
    return new Observation(((Number) values[0]).longValue(), state);
  }

  /**
   * One statement of {@code <table>_permit} or {@code <table>_group_permit}, one atomic step on
   * the database clock under an advisory lock on the key or the group.
   */
  @Override
  protected PermitReply permitCall(String sql, Arguments leading, long deadline)
      throws SQLException {
    try (Connection c = connection(deadline)) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(sql)) {
        DeadlineConnections.timeout(p, millisLeft(deadline));
        bindTime(p, leading.bind(p));
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          Object[] v = (Object[]) rs.getArray(1).getArray();
          return new PermitReply(((Number) v[0]).longValue() == 1,
              ((Number) v[1]).intValue(), ((Number) v[2]).longValue());
        }
      }
    }
  }

  @Override
  protected String permitSql(boolean grouped) {
    return grouped ? groupPermitSql : permitSql;
  }

  @Override
  protected String liveInstancesSql() {
    return liveSql;
  }

  /** A plain {@code DELETE}: a decision holds its rows' locks, and the delete waits for them. */
  @Override
  protected void delete(Rows rows, String... values) throws SQLException {
    try (Connection c = dataSource().getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(deleteSql[rows.ordinal()])) {
        DeadlineConnections.timeout(p, timeoutMillis());
        for (int i = 0; i < values.length; i++) {
          p.setString(i + 1, values[i]);
        }
        p.executeUpdate();
      }
    }
  }

  @Override
  protected RuntimeException failure(String message, Throwable cause) {
    return new PostgresStoreException(message, cause);
  }

  /** Settings of a {@link PostgresStore}. */
  public static final class Builder extends JdbcStore.Builder<Builder> {
    private boolean unlogged;

    private Builder(DataSource dataSource) {
      super(dataSource);
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected String checkTable(String table) {
      return PostgresSchema.checkTable(table);
    }

    /**
     * Creates the table {@code UNLOGGED} when {@link #createIfMissing} creates it: faster writes,
     * but PostgreSQL empties it after a crash and does not replicate it (limits start over).
     */
    public Builder unlogged(boolean unlogged) {
      this.unlogged = unlogged;
      return this;
    }

    /**
     * Checks the schema (creating it if asked) and returns the store.
     *
     * @throws IllegalStateException if the table is missing, of another version, or the
     *     database cannot be reached; the message says what to do
     */
    public PostgresStore build() {
      PostgresSchema.prepare(dataSource(), table(), createIfMissing(), unlogged);
      return new PostgresStore(this);
    }
  }
}

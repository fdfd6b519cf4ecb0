package dev.sluice.mysql;

import dev.sluice.jdbc.store.JdbcStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.sql.Types;
import java.util.List;
import java.util.concurrent.Executor;
import javax.sql.DataSource;

/**
 * Per-key limits shared through MySQL (8.0.17 or later) or MariaDB (10.6 or later): each
 * decision is one round trip, computed in the database on its clock ({@code UTC_TIMESTAMP(6)},
 * microseconds). A single bucket's {@code tryAcquire} is one {@code INSERT ... ON DUPLICATE KEY
 * UPDATE} under the key's row lock; any other decision is one {@code CALL} of a stored procedure
 * the schema installs, which holds the key (a named lock) and then its row.
 *
 * <pre>{@code
 * MysqlStore store = MysqlStore.builder(dataSource).createIfMissing(true).build();
 * RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1))).store(store).build();
 * }</pre>
 *
 * <p>Takes connections from the given {@link DataSource} (any pool; MariaDB Connector/J with
 * {@code jdbc:mariadb://host:3306/db}, or MySQL Connector/J with {@code jdbc:mysql://host:3306/db})
 * for one call at a time and never closes the DataSource. Preparing statements on the server
 * ({@code useServerPrepStmts=true}) spares the server parsing the statement on every call
 * ({@code docs/operations.md}). Thread-safe. What it shares with the other SQL store
 * (timeouts, queues, permits, pruning, fleets) is {@link JdbcStore}'s.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#mysql-and-mariadb-sluice-mysql">docs/operations.md, "MySQL and MariaDB (sluice-mysql)"</a>.
 */
public final class MysqlStore extends JdbcStore {
  /** The schema version this store needs; the table's comment says which one it has. */
  public static final int SCHEMA_VERSION = 2;
  /** The first schema file shipped in the jar, for the mysql client, Flyway or Liquibase. */
  public static final String SCHEMA_RESOURCE = "/dev/sluice/mysql/V1__sluice.sql";
  /**
   * The schema files in the order to apply them; file {@code i} takes a table from version
   * {@code i} to {@code i + 1}.
   */
  public static final List<String> SCHEMA_RESOURCES =
      List.of(SCHEMA_RESOURCE, "/dev/sluice/mysql/V2__sluice.sql");
  /** The longest permit id the permits' tables hold, in bytes of UTF-8. */
  public static final int MAX_PERMIT_ID_BYTES = 255;

  private static final int DEADLOCK_RETRIES = 5;
  /** setNetworkTimeout's executor: the drivers close the socket on the calling thread. */
  private static final Executor DIRECT = Runnable::run;
  private static final System.Logger LOG = System.getLogger(MysqlStore.class.getName());
  private final String decideSql;
  /** The one statement that decides a single bucket's tryAcquire, and its parameters in order. */
  private final String admitSql;
  private final char[] admitParameters;
  private final String decideGroupSql;
  private final String permitSql;
  private final String groupPermitSql;
  private final String liveSql;
  /** MariaDB's GET_LOCK waits fractions of a second; MySQL's whole seconds. */
  private final boolean fractionalLockWaits;

  private MysqlStore(Builder b, boolean fractionalLockWaits) {
    super(b, "MySQL", "mysql", Pruning::statements, Pruning.READ_COMMITTED);
    String table = table();
    long timeoutMillis = timeoutMillis();
    this.fractionalLockWaits = fractionalLockWaits;
    this.decideSql = "CALL " + table + "_decide(?, ?, ?, ?, ?, ?)";
    this.decideGroupSql = "CALL " + table + "_decide_group(?, ?, ?, ?, ?, ?, ?)";
    this.permitSql = "CALL " + table + "_permit(?, ?, ?, ?, ?, ?, ?, ?)";
    this.groupPermitSql = "CALL " + table + "_group_permit(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.liveSql = "CALL " + table + "_live_instances(?, ?, ?, ?)";
    StringBuilder order = new StringBuilder();
    this.admitSql = AdmitStatement.sql(table, testClock() == null,
        fractionalLockWaits ? (int) ((timeoutMillis + 999) / 1000) : 0, order);
    this.admitParameters = order.toString().toCharArray();
    adviseServerPreparation();
  }

  /**
   * Says once, at INFO, when the driver sends the single-bucket statement as text, which the
   * server then parses on every decision, and what would have it parsed once per connection
   * ({@code docs/operations.md}, "Driver settings"). Only advice: a driver or pool that cannot
   * say is left alone.
   */
  private void adviseServerPreparation() {
    String driver;
    try (Connection c = dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(admitSql, Statement.RETURN_GENERATED_KEYS)) {
      driver = AdmitStatement.preparedOnClientBy(p);
    } catch (SQLException | RuntimeException e) {
      return;   // only advice
    }
    if (driver == null) {
      return;
    }
    String remedy;
    if (driver.equals(AdmitStatement.TEXT_CONNECTOR_J) && admitSql.startsWith("SET ")) {
      remedy = "MySQL Connector/J sends every statement that begins with SET as text whatever its"
          + " settings, and on MariaDB this one begins with SET STATEMENT (it bounds the wait for"
          + " the row): MariaDB Connector/J with useServerPrepStmts=true in the URL has it parsed"
          + " once per connection";
    } else if (driver.equals(AdmitStatement.TEXT_CONNECTOR_J)) {
      remedy = "useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSqlLimit=2048 in the URL"
          + " has it parsed once per connection";
    } else {
      remedy = "useServerPrepStmts=true in the URL has it parsed once per connection";
    }
    LOG.log(System.Logger.Level.INFO, "MysqlStore on table {0}: {1} prepares statements on the"
        + " client, so the server parses the store''s single-bucket statement (1.2 KB of SQL) on"
        + " every decision; {2} (docs/operations.md, \"Driver settings\").", table(), driver,
        remedy);
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The schema's SQL for {@code table} (every file of {@link #SCHEMA_RESOURCES}, in order, with
   * the name replaced), as the mysql client runs it ({@code DELIMITER} lines included).
   * Idempotent.
   *
   * @throws IllegalArgumentException if {@code table} is not a plain lower-case identifier
   */
  public static String schemaSql(String table) {
    return MysqlSchema.sql(table);
  }

  /**
   * Holds the key's named lock, as the procedures take it, while it deletes: a reset never falls
   * between a decision's read and its write.
   */
  @Override
  protected void delete(Rows rows, String... values) throws SQLException {
    String what = switch (rows) {
      case BUCKET -> "";
      case GROUP_MEMBER -> "_groups";
      case PERMITS -> "_permits";
      case GROUP_PERMITS, GROUP_MEMBER_PERMITS -> "_group_permits";
    };
    String where = switch (rows) {
      case BUCKET, PERMITS -> " WHERE k = ?";
      case GROUP_MEMBER, GROUP_MEMBER_PERMITS -> " WHERE grp = ? AND k = ?";
      case GROUP_PERMITS -> " WHERE grp = ?";
    };
    locked(table() + what, values[0], "DELETE FROM " + table() + what + where, values);
  }

  /**
   * {@code sql} while holding the named lock the procedures take on {@code lockKey} of {@code
   * lockTable}: a reset never falls between a decision's read and its write.
   */
  private void locked(String lockTable, String lockKey, String sql, String... values) {
    try (Connection c = dataSource().getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement lock = c.prepareStatement(
          "SELECT GET_LOCK(CONCAT('sluice:', MD5(CONCAT(?, ' ', ?))), ?)")) {
        lock.setString(1, lockTable);
        lock.setString(2, lockKey);
        lock.setDouble(3, timeoutMillis() / 1000.0);
        try (ResultSet rs = lock.executeQuery()) {
          rs.next();
          if (rs.getInt(1) != 1) {
            throw new MysqlStoreException("MySQL reset on table " + lockTable + " waited more"
                + " than the store's timeout (" + timeoutMillis() + " ms) for the key", null);
          }
        }
        try (PreparedStatement p = c.prepareStatement(sql)) {
          for (int i = 0; i < values.length; i++) {
            p.setString(i + 1, values[i]);
          }
          p.executeUpdate();
        } finally {
          releaseLocks(c);
        }
      }
    } catch (SQLException e) {
      throw new MysqlStoreException("MySQL reset on table " + lockTable + " failed: "
          + e.getMessage(), e);
    }
  }

  @Override
  protected Observation decide(String stateKey, String member, StoreRequest request,
      long deadline) {
    boolean oneStatement = member == null && AdmitStatement.handles(request);
    String args = oneStatement ? null : arguments(request);
    SQLException last = null;
    for (int attempt = 0; attempt < DEADLOCK_RETRIES; attempt++) {
      try {
        if (oneStatement) {
          Observation seen = admit(stateKey, request, deadline);
          if (seen != null) {
            return seen;
          }
          oneStatement = false;   // the row holds other limits: the procedure decides
          args = arguments(request);
        }
        String procedureArgs = args;
        String row = call(member == null ? decideSql : decideGroupSql, deadline, p -> {
          int at = 1;
          p.setString(at++, stateKey);
          if (member != null) {
            p.setString(at++, member);
          }
          p.setInt(at++, request.operation().code());
          return at;
        }, (p, at) -> {
          p.setString(at++, request.layout());
          p.setString(at++, procedureArgs);
          return at;
        });
        return observation(row);
      } catch (SQLException e) {
        // A deadlock rolled the transaction back entirely: nothing was decided, so deciding
        // again is safe; so did the duplicate key of a procedure that found no row and met the
        // one statement's insert (AdmitStatement). Anything else (a timeout, a lost connection)
        // may have committed and is never replayed.
        if (!deadlock(e) && !duplicateKey(e)) {
          throw callFailure("decision", e);
        }
        last = e;
      }
    }
    throw new MysqlStoreException("MySQL decision on table " + table() + " failed "
        + DEADLOCK_RETRIES + " times with a deadlock", last);
  }

  private static boolean deadlock(SQLException e) {
    return "40001".equals(e.getSQLState()) || e.getErrorCode() == 1213;
  }

  private static boolean duplicateKey(SQLException e) {
    return e.getErrorCode() == 1062;
  }

  /**
   * A single bucket's tryAcquire by {@code deadline} in one statement ({@link AdmitStatement});
   * null if the key's row holds other limits (nothing was written). The statement reports the
   * state it found relative to its clock, not the clock, so the observation is that state at
   * this call's time (the test clock's, exactly; else 0): core's engine reads a bucket's state
   * only against the time it came with.
   */
  private Observation admit(String stateKey, StoreRequest request, long deadline)
      throws SQLException {
    long now = testClock() == null ? 0 : testClock().getAsLong();
    try (Connection c = callConnection(deadline)) {
      try (PreparedStatement p = c.prepareStatement(admitSql, Statement.RETURN_GENERATED_KEYS)) {
        long cost = request.argument(0, StoreProtocol.ARG_QUANTUM);
        long capacity = request.argument(0, StoreProtocol.ARG_CAPACITY);
        for (int i = 0; i < admitParameters.length; i++) {
          switch (admitParameters[i]) {
            case AdmitStatement.KEY -> p.setString(i + 1, stateKey);
            case AdmitStatement.NOW -> p.setLong(i + 1, now);
            case AdmitStatement.COST -> p.setLong(i + 1, cost);
            case AdmitStatement.WAIT ->
                p.setLong(i + 1, Math.max(0, (deadline - System.nanoTime()) / 1000));
            default -> p.setLong(i + 1, capacity);
          }
        }
        p.executeUpdate();
        long found = 0;
        try (ResultSet keys = p.getGeneratedKeys()) {
          if (keys.next()) {
            found = keys.getLong(1);
          }
        }
        if (found == AdmitStatement.OTHER_LIMITS) {
          return null;
        }
        if (found == AdmitStatement.TOO_LATE) {
          throw new MysqlStoreException("MySQL decision on table " + table() + " waited more than"
              + " the store's timeout (" + timeoutMillis() + " ms) for the key's row, held by"
              + " another session; nothing was charged", null);
        }
        return new Observation(now, new long[] {found == 0 ? StoreProtocol.SCRIPT_NONE
            : now + (found - AdmitStatement.BIAS)});
      }
    }
  }

  /** Binds a call's arguments after the time from {@code at}; answers the next index. */
  private interface Trailing {
    int bind(PreparedStatement p, int at) throws SQLException;
  }

  /**
   * One call by {@code deadline}: the leading arguments, the time (NULL: the database's clock),
   * the trailing ones, then the time left for the key's lock in milliseconds (rounded up to
   * whole seconds on MySQL, whose {@code GET_LOCK} counts no fractions). Answers the one
   * value of its one row. Bounded by the deadline on the network too, so a server that stops
   * answering fails the call in time (the driver then closes the connection).
   */
  private String call(String sql, long deadline, Arguments leading, Trailing trailing)
      throws SQLException {
    try (Connection c = callConnection(deadline)) {
      long leftMillis = millisLeft(deadline);
      try (PreparedStatement p = c.prepareStatement(sql)) {
        int at = leading.bind(p);
        bindTime(p, at++);
        at = trailing.bind(p, at);
        p.setInt(at, (int) Math.min(Integer.MAX_VALUE, fractionalLockWaits ? leftMillis
            : (leftMillis + 999) / 1000 * 1000));
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            throw new SQLException(sql + " answered no row");
          }
          return rs.getString(1);
        }
      } catch (SQLException e) {
        releaseLocks(c);   // a call cut short may not have released the key
        throw e;
      }
    }
  }

  /**
   * A connection by {@code deadline}, autocommitting, whose socket times out when the time left
   * runs out (the driver then closes it).
   */
  private Connection callConnection(long deadline) throws SQLException {
    Connection c = connection(deadline);
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      long leftMillis = millisLeft(deadline);
      c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE, leftMillis + 1));
      return c;
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** Releases the named locks this session holds, if it still can. */
  private static void releaseLocks(Connection c) {
    try (Statement s = c.createStatement()) {
      s.execute("DO RELEASE_ALL_LOCKS()");
    } catch (SQLException | RuntimeException e) {
      // the connection is gone; so are its locks
    }
  }

  @Override
  protected RuntimeException callFailure(String what, SQLException e) {
    String state = e.getSQLState();
    if ((state != null && state.startsWith("08")) || e instanceof SQLNonTransientConnectionException
        || e instanceof SQLTransientConnectionException) {
      return new StoreUnavailableException("MySQL " + what + " on table " + table()
          + " failed: the connection was lost: " + e.getMessage(), e);
    }
    if ("45000".equals(state)) {
      return new MysqlStoreException("MySQL " + what + " on table " + table() + " waited more"
          + " than the store's timeout (" + timeoutMillis() + " ms) for the key held by other"
          + " decisions", e);
    }
    return super.callFailure(what, e);
  }

  @Override
  protected RuntimeException failure(String message, Throwable cause) {
    return new MysqlStoreException(message, cause);
  }

  /** Reads {@code now,slot,...}. */
  static Observation observation(String row) {
    long[] values = longs(row);
    long[] state = new long[values.length - 1];
    System.arraycopy(values, 1, state, 0, state.length);
    return new Observation(values[0], state);
  }

  /** The integers of a line separated by commas. */
  static long[] longs(String row) {
    int n = 1;
    for (int i = 0; i < row.length(); i++) {
      if (row.charAt(i) == ',') {
        n++;
      }
    }
    long[] out = new long[n];
    int from = 0;
    for (int i = 0; i < n; i++) {
      int to = row.indexOf(',', from);
      if (to < 0) {
        to = row.length();
      }
      out[i] = Long.parseLong(row, from, to, 10);
      from = to + 1;
    }
    return out;
  }

  /** One {@code CALL} of {@code <table>_permit} or {@code <table>_group_permit}, holding the key. */
  @Override
  protected PermitReply permitCall(String sql, Arguments leading, long deadline)
      throws SQLException {
    long[] v = longs(call(sql, deadline, leading, (p, at) -> at));
    return new PermitReply(v[0] == 1, (int) v[1], v[2]);
  }

  @Override
  protected String permitSql(boolean grouped) {
    return grouped ? groupPermitSql : permitSql;
  }

  @Override
  protected String liveInstancesSql() {
    return liveSql;
  }

  @Override
  protected int absentKeyType() {
    return Types.VARBINARY;
  }

  @Override
  protected void checkPermitId(String permitId) {
    if (permitId.length() > MAX_PERMIT_ID_BYTES / 4
        && permitId.getBytes(StandardCharsets.UTF_8).length > MAX_PERMIT_ID_BYTES) {
      throw new IllegalArgumentException("a permit id must be at most " + MAX_PERMIT_ID_BYTES
          + " bytes of UTF-8 on MySQL but was " + permitId.getBytes(StandardCharsets.UTF_8).length
          + " bytes");
    }
  }

  /** Settings of a {@link MysqlStore}. */
  public static final class Builder extends JdbcStore.Builder<Builder> {
    private Builder(DataSource dataSource) {
      super(dataSource);
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected String checkTable(String table) {
      return MysqlSchema.checkTable(table);
    }

    /**
     * Checks the schema (creating it if asked) and returns the store.
     *
     * @throws IllegalStateException if the table is missing, of another version, or the
     *     database cannot be reached; the message says what to do
     */
    public MysqlStore build() {
      return new MysqlStore(this, MysqlSchema.prepare(dataSource(), table(), createIfMissing()));
    }
  }
}

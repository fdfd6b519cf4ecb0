package dev.sluice.mysql;

import dev.sluice.jdbc.AsyncCalls;
import dev.sluice.jdbc.BatchPruning;
import dev.sluice.jdbc.DeadlineConnections;
import dev.sluice.jdbc.JdbcSettings;
import dev.sluice.jdbc.RecoveryConnections;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreProtocol.PermitOperation;
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
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
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
 * ({@code docs/operations.md}). Thread-safe.
 */
public final class MysqlStore implements DecisionStore, PermitStore {
  /** The schema version this store needs; the table's comment says which one it has. */
  public static final int SCHEMA_VERSION = 2;
  /** The table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "sluice_buckets";
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
  /** Decisions on one key (one stripe) this JVM lets wait in the database at once. */
  private static final int IN_FLIGHT_PER_KEY = 4;
  /** setNetworkTimeout's executor: the drivers close the socket on the calling thread. */
  private static final Executor DIRECT = Runnable::run;
  private static final System.Logger LOG = System.getLogger(MysqlStore.class.getName());
  private final DataSource dataSource;
  private final BatchPruning pruning;
  private final DeadlineConnections connections;
  private final String table;
  private final String decideSql;
  /** The one statement that decides a single bucket's tryAcquire, and its parameters in order. */
  private final String admitSql;
  private final char[] admitParameters;
  private final String decideGroupSql;
  private final String permitSql;
  private final String groupPermitSql;
  private final String liveSql;
  private final String prefix;
  private final LongSupplier micros;
  private final long timeoutMillis;
  private final long timeoutNanos;
  private final AsyncCalls async;
  /** MariaDB's GET_LOCK waits fractions of a second; MySQL's whole seconds. */
  private final boolean fractionalLockWaits;
  /** Decisions on one key from this JVM go to the database a few at a time (by key hash). */
  private final Semaphore[] stripes;
  private final boolean combine;

  private MysqlStore(Builder b) {
    this.dataSource = b.dataSource;
    this.table = b.table;
    this.connections = new DeadlineConnections(dataSource, b.recoveryDataSource == null ? null
        : new RecoveryConnections(b.recoveryDataSource), "MySQL decision on table " + table,
        b.timeout.toMillis());
    this.prefix = b.prefix;
    this.micros = b.micros;
    this.timeoutMillis = b.timeout.toMillis();
    this.timeoutNanos = b.timeout.toNanos();
    this.async = new AsyncCalls(b.asyncThreads, "MySQL store on table " + table,
        "sluice-mysql-async-" + table);
    this.combine = b.combine;
    this.stripes = new Semaphore[b.localQueue ? 1024 : 0];
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Semaphore(IN_FLIGHT_PER_KEY);
    }
    this.decideSql = "CALL " + table + "_decide(?, ?, ?, ?, ?, ?)";
    this.decideGroupSql = "CALL " + table + "_decide_group(?, ?, ?, ?, ?, ?, ?)";
    this.permitSql = "CALL " + table + "_permit(?, ?, ?, ?, ?, ?, ?, ?)";
    this.groupPermitSql = "CALL " + table + "_group_permit(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.liveSql = "CALL " + table + "_live_instances(?, ?, ?, ?)";
    this.fractionalLockWaits = MysqlSchema.prepare(dataSource, table, b.createIfMissing);
    StringBuilder order = new StringBuilder();
    this.admitSql = AdmitStatement.sql(table, b.micros == null,
        fractionalLockWaits ? (int) ((timeoutMillis + 999) / 1000) : 0, order);
    this.admitParameters = order.toString().toCharArray();
    adviseServerPreparation();
    this.pruning = new BatchPruning(dataSource, Pruning.statements(table), micros, b.pruneBatch,
        b.pruneEvery, "sluice-mysql-prune-" + table, Pruning.READ_COMMITTED,
        e -> new MysqlStoreException("MySQL pruning of table " + table + " failed: " + e.getMessage(), e));
  }

  /**
   * Says once, at INFO, when the driver sends the single-bucket statement as text, which the
   * server then parses on every decision, and what would have it parsed once per connection
   * ({@code docs/operations.md}, "Driver settings"). Only advice: a driver or pool that cannot
   * say is left alone.
   */
  private void adviseServerPreparation() {
    String driver;
    try (Connection c = dataSource.getConnection();
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
        + " every decision; {2} (docs/operations.md, \"Driver settings\").", table, driver,
        remedy);
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
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

  @Override
  public long ticksPerSecond() {
    return 1_000_000L;
  }

  /**
   * One decision within the store's timeout, whichever part is slow: waiting behind other
   * decisions on the same key (in this JVM, then for the key's lock in the database), getting a
   * connection from the pool, or the call.
   */
  @Override
  public Observation apply(String key, StoreRequest request) {
    return queued(prefix + key, null, request);
  }

  /** {@link #apply} on one of this store's threads: the caller's thread never waits for JDBC. */
  @Override
  public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
    return async.call(() -> apply(key, request));
  }

  /**
   * A group's decision: one call of the procedure {@code <table>_decide_group}, which holds the
   * group and writes the key's row and the parent's in one transaction, in {@code
   * <table>_groups}. Decisions of one group queue on it, so a group decides about as fast as one
   * hot key.
   */
  @Override
  public Observation applyGroup(String group, String key, StoreRequest request) {
    if (!request.isGroup()) {
      throw new IllegalArgumentException("applyGroup needs a group's request");
    }
    return queued(prefix + group, key, request);
  }

  @Override
  public CompletableFuture<Observation> applyGroupAsync(String group, String key,
      StoreRequest request) {
    return async.call(() -> applyGroup(group, key, request));
  }

  @Override
  public boolean supportsGroups() {
    return true;
  }

  /** As the builder set ({@link Builder#combineDecisions}, on by default). */
  @Override
  public boolean combinesDecisions() {
    return combine;
  }

  @Override
  public void resetGroupMember(String group, String key) {
    locked(table + "_groups", prefix + group, "DELETE FROM " + table
        + "_groups WHERE grp = ? AND k = ?", prefix + group, key);
  }

  @Override
  public void reset(String key) {
    locked(table, prefix + key, "DELETE FROM " + table + " WHERE k = ?", prefix + key);
  }

  /**
   * {@code sql} while holding the named lock the procedures take on {@code lockKey} of {@code
   * lockTable}: a reset never falls between a decision's read and its write.
   */
  private void locked(String lockTable, String lockKey, String sql, String... values) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement lock = c.prepareStatement(
          "SELECT GET_LOCK(CONCAT('sluice:', MD5(CONCAT(?, ' ', ?))), ?)")) {
        lock.setString(1, lockTable);
        lock.setString(2, lockKey);
        lock.setDouble(3, timeoutMillis / 1000.0);
        try (ResultSet rs = lock.executeQuery()) {
          rs.next();
          if (rs.getInt(1) != 1) {
            throw new MysqlStoreException("MySQL reset on table " + lockTable + " waited more"
                + " than the store's timeout (" + timeoutMillis + " ms) for the key", null);
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

  /** Within the store's timeout, behind at most a few others of this JVM on the same key. */
  private Observation queued(String stateKey, String member, StoreRequest request) {
    long deadline = System.nanoTime() + timeoutNanos;
    if (stripes.length == 0) {
      return decide(stateKey, member, request, deadline);
    }
    Semaphore lock =
        stripes[((stateKey.hashCode() * 0x9E3779B9) >>> 22) & (stripes.length - 1)];
    try {
      if (!lock.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS)) {
        throw new MysqlStoreException("MySQL decision on table " + table + " waited more"
            + " than the store's timeout (" + timeoutMillis + " ms) behind other decisions on"
            + " the same key", null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new MysqlStoreException("interrupted while waiting to decide on key " + stateKey, e);
    }
    try {
      return decide(stateKey, member, request, deadline);
    } finally {
      lock.release();
    }
  }

  private Observation decide(String stateKey, String member, StoreRequest request,
      long deadline) {
    boolean oneStatement = member == null && AdmitStatement.handles(request);
    String args = oneStatement ? null : args(request);
    SQLException last = null;
    for (int attempt = 0; attempt < DEADLOCK_RETRIES; attempt++) {
      try {
        if (oneStatement) {
          Observation seen = admit(stateKey, request, deadline);
          if (seen != null) {
            return seen;
          }
          oneStatement = false;   // the row holds other limits: the procedure decides
          args = args(request);
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
          throw failure("decision", e);
        }
        last = e;
      }
    }
    throw new MysqlStoreException("MySQL decision on table " + table + " failed "
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
    long now = micros == null ? 0 : micros.getAsLong();
    try (Connection c = connection(deadline)) {
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
          throw new MysqlStoreException("MySQL decision on table " + table + " waited more than"
              + " the store's timeout (" + timeoutMillis + " ms) for the key's row, held by"
              + " another session; nothing was charged", null);
        }
        return new Observation(now, new long[] {found == 0 ? StoreProtocol.SCRIPT_NONE
            : now + (found - AdmitStatement.BIAS)});
      }
    }
  }

  private RuntimeException failure(String what, SQLException e) {
    String state = e.getSQLState();
    if ((state != null && state.startsWith("08")) || e instanceof SQLNonTransientConnectionException
        || e instanceof SQLTransientConnectionException) {
      return new StoreUnavailableException("MySQL " + what + " on table " + table
          + " failed: the connection was lost: " + e.getMessage(), e);
    }
    if ("45000".equals(state)) {
      return new MysqlStoreException("MySQL " + what + " on table " + table + " waited more"
          + " than the store's timeout (" + timeoutMillis + " ms) for the key held by other"
          + " decisions", e);
    }
    return new MysqlStoreException("MySQL " + what + " on table " + table + " failed: "
        + e.getMessage(), e);
  }

  /** Binds a call's arguments from {@code at}; answers the next index. */
  private interface Arguments {
    int bind(PreparedStatement p, int at) throws SQLException;
  }

  /** Binds the arguments before the time; answers the time's index. */
  private interface Leading {
    int bind(PreparedStatement p) throws SQLException;
  }

  /**
   * One call by {@code deadline}: the leading arguments, the time (NULL: the database's clock),
   * the trailing ones, then the time left for the key's lock in milliseconds (rounded up to
   * whole seconds on MySQL, whose {@code GET_LOCK} counts no fractions). Answers the one
   * value of its one row. Bounded by the deadline on the network too, so a server that stops
   * answering fails the call in time (the driver then closes the connection).
   */
  private String call(String sql, long deadline, Leading leading, Arguments trailing)
      throws SQLException {
    try (Connection c = connection(deadline)) {
      long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
      try (PreparedStatement p = c.prepareStatement(sql)) {
        int at = leading.bind(p);
        if (micros == null) {
          p.setNull(at++, Types.BIGINT);
        } else {
          p.setLong(at++, micros.getAsLong());
        }
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
  private Connection connection(long deadline) throws SQLException {
    Connection c = connections.get(deadline);
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
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

  /**
   * Checks within the store's timeout that a connection can be had and the database answers
   * ({@code Connection.isValid}); touches no key.
   */
  @Override
  public void ping() {
    long deadline = System.nanoTime() + timeoutNanos;
    try (Connection c = connections.get(deadline)) {
      int seconds = (int) Math.max(1, (deadline - System.nanoTime() + 999_999_999L) / 1_000_000_000L);
      if (!c.isValid(seconds)) {
        throw new StoreUnavailableException("MySQL does not answer (table " + table + ")", null);
      }
    } catch (SQLException e) {
      throw new StoreUnavailableException("MySQL does not answer (table " + table + "): "
          + e.getMessage(), e);
    }
  }

  private static String args(StoreRequest r) {
    StringBuilder b = new StringBuilder(16 + 48 * r.limits());
    for (int i = 0; i < r.limits(); i++) {
      for (int j = 0; j < StoreProtocol.ARGS_PER_LIMIT; j++) {
        if (b.length() > 0) {
          b.append(',');
        }
        b.append(r.argument(i, j));
      }
    }
    b.append(',').append(r.count());
    if (r.isGroup()) {
      b.append(',').append(r.reserve());
    }
    return b.toString();
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

  /**
   * Deletes rows whose {@code expires_at} has passed, in batches of the builder's
   * {@link Builder#pruneBatchSize}, each its own short statement. Returns how many rows it
   * deleted. Safe to call from any thread, at any time.
   */
  public long pruneExpired() {
    return pruning.pruneExpired();
  }

  /** Rows deleted by pruning since this store was built. */
  public long prunedRows() {
    return pruning.pruned();
  }

  // ------------------------------------------------------------------------------ permits

  private static final int PERMIT_ACQUIRE = PermitOperation.ACQUIRE.code();
  private static final int PERMIT_RENEW = PermitOperation.RENEW.code();
  private static final int PERMIT_RELEASE = PermitOperation.RELEASE.code();
  private static final int PERMIT_COUNT = PermitOperation.COUNT.code();
  private static final int PERMIT_CANCEL = PermitOperation.CANCEL.code();

  /**
   * Takes a permit in {@code <table>_permits}: one call, one atomic step on the database clock
   * while holding the key; see {@link PermitStore}.
   */
  @Override
  public PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return permit(PERMIT_ACQUIRE, key, permitId, weight, ceiling, leaseMillis);
  }

  /** {@link #acquire} on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> acquireAsync(String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return async.call(() -> acquire(key, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
    return permit(PERMIT_RENEW, key, permitId, weight, 0, leaseMillis);
  }

  @Override
  public PermitReply release(String key, String permitId, int weight) {
    return permit(PERMIT_RELEASE, key, permitId, weight, 0, 0);
  }

  /** {@link #release} on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> releaseAsync(String key, String permitId, int weight) {
    return async.call(() -> release(key, permitId, weight));
  }

  /**
   * Gives back a permit whose acquire's answer was lost: deletes it if held, and leaves a row of
   * weight 0 for its id until now plus the lease; see {@link PermitStore#cancel}.
   */
  @Override
  public PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
    return permit(PERMIT_CANCEL, key, permitId, weight, 0, leaseMillis);
  }

  /** {@link #cancel} on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> cancelAsync(String key, String permitId, int weight,
      long leaseMillis) {
    return async.call(() -> cancel(key, permitId, weight, leaseMillis));
  }

  @Override
  public int inFlight(String key) {
    return permit(PERMIT_COUNT, key, "", 1, 0, 0).inFlight();
  }

  @Override
  public void resetPermits(String key) {
    locked(table + "_permits", prefix + key, "DELETE FROM " + table + "_permits WHERE k = ?",
        prefix + key);
  }

  private PermitReply permit(int op, String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    checkId(permitId);
    return permitCall(permitSql, p -> {
      p.setInt(1, op);
      p.setString(2, prefix + key);
      p.setString(3, permitId);
      p.setInt(4, weight);
      p.setInt(5, ceiling);
      p.setLong(6, leaseMillis);
      return 7;
    });
  }

  private static void checkId(String permitId) {
    if (permitId.length() > MAX_PERMIT_ID_BYTES / 4
        && permitId.getBytes(StandardCharsets.UTF_8).length > MAX_PERMIT_ID_BYTES) {
      throw new IllegalArgumentException("a permit id must be at most " + MAX_PERMIT_ID_BYTES
          + " bytes of UTF-8 on MySQL but was " + permitId.getBytes(StandardCharsets.UTF_8).length
          + " bytes");
    }
  }

  private PermitReply permitCall(String sql, Leading leading) {
    long deadline = System.nanoTime() + timeoutNanos;
    try {
      long[] v = longs(call(sql, deadline, leading, (p, at) -> at));
      return new PermitReply(v[0] == 1, (int) v[1], v[2]);
    } catch (SQLException e) {
      throw failure("permit call", e);
    }
  }

  // ------------------------------------------------------------------------------ permit groups

  /** Grouped permits: rows of {@code <table>_group_permits}, each call holding the group. */
  @Override
  public boolean supportsPermitGroups() {
    return true;
  }

  @Override
  public PermitReply acquire(PermitGroup group, String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return groupPermit(PERMIT_ACQUIRE, group.name(), key, permitId, weight, ceiling, group,
        leaseMillis);
  }

  /** The grouped acquire on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> acquireAsync(PermitGroup group, String key,
      String permitId, int weight, int ceiling, long leaseMillis) {
    return async.call(() -> acquire(group, key, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return groupPermit(PERMIT_RENEW, group, key, permitId, weight, 0, null, leaseMillis);
  }

  @Override
  public PermitReply release(String group, String key, String permitId, int weight) {
    return groupPermit(PERMIT_RELEASE, group, key, permitId, weight, 0, null, 0);
  }

  /** The grouped release on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> releaseAsync(String group, String key, String permitId,
      int weight) {
    return async.call(() -> release(group, key, permitId, weight));
  }

  @Override
  public PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return groupPermit(PERMIT_CANCEL, group, key, permitId, weight, 0, null, leaseMillis);
  }

  /** The grouped cancel on one of this store's threads. */
  @Override
  public CompletableFuture<PermitReply> cancelAsync(String group, String key, String permitId,
      int weight, long leaseMillis) {
    return async.call(() -> cancel(group, key, permitId, weight, leaseMillis));
  }

  @Override
  public int inFlight(String group, String key) {
    return groupPermit(PERMIT_COUNT, group, key, "", 1, 0, null, 0).inFlight();
  }

  @Override
  public void resetPermits(String group, String key) {
    if (key == null) {
      locked(table + "_group_permits", prefix + group, "DELETE FROM " + table
          + "_group_permits WHERE grp = ?", prefix + group);
    } else {
      locked(table + "_group_permits", prefix + group, "DELETE FROM " + table
          + "_group_permits WHERE grp = ? AND k = ?", prefix + group, prefix + key);
    }
  }

  private PermitReply groupPermit(int op, String group, String key, String permitId, int weight,
      int ceiling, PermitGroup terms, long leaseMillis) {
    checkId(permitId);
    return permitCall(groupPermitSql, p -> {
      p.setInt(1, op);
      p.setString(2, prefix + group);
      if (key == null) {
        p.setNull(3, Types.VARBINARY);
      } else {
        p.setString(3, prefix + key);
      }
      p.setString(4, permitId);
      p.setInt(5, weight);
      p.setInt(6, ceiling);
      p.setInt(7, terms == null ? 0 : terms.limit());
      p.setInt(8, terms == null ? 0 : terms.borrowCeiling());
      p.setInt(9, terms == null ? 0 : terms.assured());
      p.setLong(10, leaseMillis);
      return 11;
    });
  }

  /**
   * Fleet mode: records in {@code <table>_instances} that {@code instance} is alive and counts the
   * fleet's live instances, on the database clock, on one of this store's threads.
   */
  @Override
  public CompletableFuture<Integer> liveInstances(String fleet, String instance,
      long ttlMillis) {
    String fleetKey = prefix + fleet;
    return async.call(() -> {
      try (Connection c = dataSource.getConnection();
          PreparedStatement p = c.prepareStatement(liveSql)) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        DeadlineConnections.timeout(p, timeoutMillis);
        p.setString(1, fleetKey);
        p.setString(2, instance);
        p.setLong(3, ttlMillis);
        if (micros == null) {
          p.setNull(4, Types.BIGINT);
        } else {
          p.setLong(4, micros.getAsLong());
        }
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          return rs.getInt(1);
        }
      } catch (SQLException ex) {
        throw new MysqlStoreException("MySQL could not count the live instances of " + fleet
            + ": " + ex.getMessage(), ex);
      }
    });
  }

  /** Stops scheduled pruning; the DataSource belongs to the caller and stays open. */
  @Override
  public void close() {
    connections.close();
    async.close();
    pruning.close();
  }

  @Override
  public String toString() {
    return "MysqlStore[" + table + "]";
  }

  /** Settings of a {@link MysqlStore}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String table = DEFAULT_TABLE;
    private boolean createIfMissing;
    private Duration timeout = Duration.ofMillis(200);
    private String prefix = "";
    private LongSupplier micros;
    private Duration pruneEvery;
    private int pruneBatch = 1000;
    private boolean localQueue = true;
    private boolean combine = true;
    private int asyncThreads = 4;
    private DataSource recoveryDataSource;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /**
     * A DataSource that opens a new connection on each call, to the same database (for example
     * {@code org.mariadb.jdbc.MariaDbDataSource} with the pool's URL and a {@code connectTimeout}).
     * After an outage a pool may wait out its own back-off before it connects again (HikariCP
     * 5: up to 5 s), while the database already answers. With this set, from the first decision
     * the pool cannot serve in time until the pool serves again, decisions use at most
     * {@value RecoveryConnections#MOST} connections opened from it, so decisions come back as
     * soon as the database accepts connections. Default: none.
     */
    public Builder recoveryDataSource(DataSource direct) {
      this.recoveryDataSource = Objects.requireNonNull(direct, "recoveryDataSource");
      return this;
    }

    /** The table (default {@value #DEFAULT_TABLE}); a plain lower-case identifier. */
    public Builder table(String table) {
      this.table = MysqlSchema.checkTable(table);
      return this;
    }

    /** Creates the tables and procedures at build() when missing (default: fail instead). */
    public Builder createIfMissing(boolean create) {
      this.createIfMissing = create;
      return this;
    }

    /**
     * The longest a decision may take, all of it (default 200 ms): waiting behind other
     * decisions on the same key, getting a connection from the pool (whatever the pool's own
     * connection timeout), waiting for the key in the database, and the call, whose socket
     * times out when the time left runs out.
     */
    public Builder statementTimeout(Duration timeout) {
      this.timeout = JdbcSettings.statementTimeout(timeout);
      return this;
    }

    /** A prefix for every key in the tables, e.g. {@code "api:"} (default none). */
    public Builder prefix(String prefix) {
      this.prefix = Objects.requireNonNull(prefix, "prefix");
      return this;
    }

    /**
     * Prunes expired rows every {@code every} on a daemon thread of the store's (default: only
     * when {@link MysqlStore#pruneExpired()} is called).
     */
    public Builder pruneEvery(Duration every) {
      this.pruneEvery = JdbcSettings.pruneEvery(every);
      return this;
    }

    /**
     * Whether this JVM sends a few decisions per key (4 per stripe of 1,024) at a time (default
     * true): on a hot key, threads then wait in the JVM rather than as database sessions queued
     * on the key's lock. Turn off to let the database queue them.
     */
    public Builder localQueue(boolean on) {
      this.localQueue = on;
      return this;
    }

    /**
     * Whether a limiter combines this JVM's {@code tryAcquire} calls on one key (default true):
     * while a call on the key is in flight, those that arrive behind it go as one call, a lease
     * of as many grains, decided at one reading of the database's clock exactly as the same
     * calls one after the other (buckets without a penalty; other limits are never combined).
     * On a hot key this answers many callers per round trip instead of one
     * ({@code docs/benchmarks.md}). Turn off to send every call.
     */
    public Builder combineDecisions(boolean on) {
      this.combine = on;
      return this;
    }

    /**
     * Threads that run asynchronous calls ({@code tryAcquireAsync}, fleet mode's lease calls)
     * so that their callers never wait for JDBC (default 4; 1 to 256). Each holds one pooled
     * connection while it runs a call.
     */
    public Builder asyncThreads(int threads) {
      this.asyncThreads = JdbcSettings.asyncThreads(threads);
      return this;
    }

    /** Rows deleted per pruning statement (default 1000). */
    public Builder pruneBatchSize(int rows) {
      this.pruneBatch = JdbcSettings.pruneBatchSize(rows);
      return this;
    }

    /**
     * Test hook: time in microseconds since the epoch comes from here instead of the database's
     * clock; pruning uses it too.
     */
    public Builder timeSourceMicros(LongSupplier micros) {
      this.micros = Objects.requireNonNull(micros, "micros");
      return this;
    }

    /**
     * Checks the schema (creating it if asked) and returns the store.
     *
     * @throws IllegalStateException if the table is missing, of another version, or the
     *     database cannot be reached; the message says what to do
     */
    public MysqlStore build() {
      return new MysqlStore(this);
    }
  }
}

package dev.sluice.postgres;

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
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
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
 * and never closes the DataSource. Thread-safe.
 */
public final class PostgresStore implements DecisionStore, PermitStore {
  /** The schema version this store needs; the table's comment says which one it has. */
  public static final int SCHEMA_VERSION = 9;
  /** The table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "sluice_buckets";
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
  /** Decisions on one key (one stripe) this JVM lets wait in the database at once. */
  private static final int IN_FLIGHT_PER_KEY = 4;
  private final DataSource dataSource;
  /** Deletes expired rows in batches: on a schedule, and when asked. */
  private final BatchPruning pruning;
  /** Connections for decisions, by their deadline, from the pool or the recovery path. */
  private final DeadlineConnections connections;
  private final String table;
  private final String decideSql;
  private final String resetSql;
  private final String decideGroupSql;
  private final String resetMemberSql;
  private final String permitSql;
  private final String resetPermitsSql;
  private final String groupPermitSql;
  private final String resetGroupPermitsSql;
  private final String resetGroupMemberPermitsSql;
  private final String prefix;
  private final LongSupplier micros;
  private final long timeoutMillis;
  private final long timeoutNanos;
  /** Where asynchronous calls run: JDBC blocks, and an asynchronous caller must not. */
  private final AsyncCalls async;
  /**
   * Decisions on one key from this JVM go to the database one at a time: threads queue here,
   * cheaply, instead of as backends waiting on the row lock (striped by key hash).
   */
  private final Semaphore[] stripes;
  private final boolean combine;

  private PostgresStore(Builder b) {
    this.dataSource = b.dataSource;
    this.connections = new DeadlineConnections(dataSource, b.recoveryDataSource == null ? null
        : new RecoveryConnections(b.recoveryDataSource), "PostgreSQL decision on table " + b.table,
        b.timeout.toMillis());
    this.table = b.table;
    this.prefix = b.prefix;
    this.micros = b.micros;
    this.timeoutMillis = b.timeout.toMillis();
    this.timeoutNanos = b.timeout.toNanos();
    this.async = new AsyncCalls(b.asyncThreads, "PostgreSQL store on table " + table,
        "sluice-postgres-async-" + table);
    this.combine = b.combine;
    this.stripes = new Semaphore[b.localQueue ? 1024 : 0];
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Semaphore(IN_FLIGHT_PER_KEY);
    }
    this.decideSql = "SELECT " + table + "_decide(?, ?, ?, ?, ?::bigint[], ?)";
    this.decideGroupSql = "SELECT " + table + "_decide_group(?, ?, ?, ?, ?, ?::bigint[], ?)";
    this.resetMemberSql = "DELETE FROM " + table + "_groups WHERE grp = ? AND key = ?";
    this.resetSql = "DELETE FROM " + table + " WHERE key = ?";
    this.permitSql = "SELECT " + table + "_permit(?, ?, ?, ?, ?, ?, ?)";
    this.resetPermitsSql = "DELETE FROM " + table + "_permits WHERE key = ?";
    this.groupPermitSql = "SELECT " + table + "_group_permit(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.resetGroupPermitsSql = "DELETE FROM " + table + "_group_permits WHERE grp = ?";
    this.resetGroupMemberPermitsSql = "DELETE FROM " + table
        + "_group_permits WHERE grp = ? AND key = ?";
    PostgresSchema.prepare(dataSource, table, b.createIfMissing, b.unlogged);
    this.pruning = new BatchPruning(dataSource, Pruning.statements(table), micros, b.pruneBatch,
        b.pruneEvery, "sluice-postgres-prune-" + table, Pruning.READ_COMMITTED,
        e -> new PostgresStoreException("PostgreSQL pruning of table " + table + " failed: " + e.getMessage(), e));
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
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

  @Override
  public long ticksPerSecond() {
    return 1_000_000L;
  }

  /**
   * One decision within the store's timeout, whichever part is slow: waiting behind other
   * decisions on the same key, getting a connection from the pool, or the statement.
   */
  @Override
  public Observation apply(String key, StoreRequest request) {
    return queued(prefix + key, null, request);
  }

  /**
   * A group's decision: one call of the function {@code <table>_decide_group}, which locks the
   * group's parent row and then the key's, in the table {@code <table>_groups}. Decisions of one
   * group queue on its parent row, so a group decides about as fast as one hot key.
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
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(resetMemberSql)) {
        DeadlineConnections.timeout(p, timeoutMillis);
        p.setString(1, prefix + group);
        p.setString(2, key);
        p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new PostgresStoreException("PostgreSQL reset on table " + table + "_groups failed: "
          + e.getMessage(), e);
    }
  }

  /**
   * Within the store's timeout, one decision on {@code stateKey} (a key; or a group when
   * {@code member} is its key), behind at most a few others of this JVM on the same row.
   */
  private Observation queued(String stateKey, String member, StoreRequest request) {
    long deadline = System.nanoTime() + timeoutNanos;
    if (stripes.length == 0) {
      return decide(stateKey, member, request, deadline);
    }
    Semaphore lock =
        stripes[((stateKey.hashCode() * 0x9E3779B9) >>> 22) & (stripes.length - 1)];
    try {
      if (!lock.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS)) {
        throw new PostgresStoreException("PostgreSQL decision on table " + table + " waited more"
            + " than the store's timeout (" + timeoutMillis + " ms) behind other decisions on"
            + " the same key", null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PostgresStoreException("interrupted while waiting to decide on key " + stateKey, e);
    }
    try {
      return decide(stateKey, member, request, deadline);
    } finally {
      lock.release();
    }
  }

  private Observation decide(String stateKey, String member, StoreRequest request,
      long deadline) {
    String args = args(request);
    SQLException last = null;
    for (int attempt = 0; attempt < SERIALIZATION_RETRIES; attempt++) {
      try (Connection c = connections.get(deadline)) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
        try (PreparedStatement p = c.prepareStatement(member == null ? decideSql : decideGroupSql)) {
          DeadlineConnections.timeout(p, leftMillis);
          int at = 1;
          p.setString(at++, stateKey);
          if (member != null) {
            p.setString(at++, member);
          }
          p.setInt(at++, request.operation().code());
          if (micros == null) {
            p.setNull(at++, Types.BIGINT);
          } else {
            p.setLong(at++, micros.getAsLong());
          }
          p.setString(at++, request.layout());
          p.setString(at++, args);
          p.setInt(at, (int) Math.min(Integer.MAX_VALUE, leftMillis));
          try (ResultSet rs = p.executeQuery()) {
            rs.next();
            return observation(rs.getArray(1));
          }
        }
      } catch (SQLException e) {
        // A serialization failure or deadlock rolled the statement back entirely: nothing was
        // decided, so deciding again is safe. Anything else (a timeout, a lost connection) may
        // have committed and is never replayed.
        String state = e.getSQLState();
        if (state != null && state.startsWith("08")) {
          throw new StoreUnavailableException("PostgreSQL decision on table " + table
              + " failed: the connection was lost: " + e.getMessage(), e);
        }
        if (!"40001".equals(state) && !"40P01".equals(state)) {
          throw new PostgresStoreException("PostgreSQL decision on table " + table
              + " failed: " + e.getMessage(), e);
        }
        last = e;
      }
    }
    throw new PostgresStoreException("PostgreSQL decision on table " + table + " failed "
        + SERIALIZATION_RETRIES + " times with a serialization failure", last);
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
        throw new StoreUnavailableException("PostgreSQL does not answer (table " + table + ")", null);
      }
    } catch (SQLException e) {
      throw new StoreUnavailableException("PostgreSQL does not answer (table " + table + "): "
          + e.getMessage(), e);
    }
  }

  private static String args(StoreRequest r) {
    StringBuilder b = new StringBuilder(16 + 48 * r.limits()).append('{');
    for (int i = 0; i < r.limits(); i++) {
      for (int j = 0; j < StoreProtocol.ARGS_PER_LIMIT; j++) {
        if (b.length() > 1) {
          b.append(',');
        }
        b.append(r.argument(i, j));
      }
    }
    b.append(',').append(r.count());
    if (r.isGroup()) {
      b.append(',').append(r.reserve());
    }
    return b.append('}').toString();
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

  @Override
  public void reset(String key) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(resetSql)) {
        DeadlineConnections.timeout(p, timeoutMillis);
        p.setString(1, prefix + key);
        p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new PostgresStoreException("PostgreSQL reset on table " + table + " failed: "
          + e.getMessage(), e);
    }
  }

  /**
   * Deletes rows whose {@code expires_at} has passed, in batches of the builder's
   * {@link Builder#pruneBatchSize}, each its own short statement that skips rows a decision
   * holds. Returns how many rows it deleted. Safe to call from any thread, at any time.
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
   * Takes a permit in {@code <table>_permits}: one statement, one atomic step on the database
   * clock under an advisory lock on the key; see {@link PermitStore}.
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
    deletePermits(resetPermitsSql, prefix + key);
  }

  private void deletePermits(String sql, String... values) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(sql)) {
        DeadlineConnections.timeout(p, timeoutMillis);
        for (int i = 0; i < values.length; i++) {
          p.setString(i + 1, values[i]);
        }
        p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new PostgresStoreException("PostgreSQL reset of permits on table " + table
          + " failed: " + e.getMessage(), e);
    }
  }

  private PermitReply permit(int op, String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
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

  /** Binds a permit call's arguments; answers the index of the last one, the time. */
  private interface Arguments {
    int bind(PreparedStatement p) throws SQLException;
  }

  private PermitReply permitCall(String sql, Arguments arguments) {
    long deadline = System.nanoTime() + timeoutNanos;
    try (Connection c = connections.get(deadline)) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
      try (PreparedStatement p = c.prepareStatement(sql)) {
        DeadlineConnections.timeout(p, leftMillis);
        int now = arguments.bind(p);
        if (micros == null) {
          p.setNull(now, Types.BIGINT);
        } else {
          p.setLong(now, micros.getAsLong());
        }
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          Object[] v = (Object[]) rs.getArray(1).getArray();
          return new PermitReply(((Number) v[0]).longValue() == 1,
              ((Number) v[1]).intValue(), ((Number) v[2]).longValue());
        }
      }
    } catch (SQLException e) {
      String state = e.getSQLState();
      if (state != null && state.startsWith("08")) {
        throw new StoreUnavailableException("PostgreSQL permit call on table " + table
            + " failed: the connection was lost: " + e.getMessage(), e);
      }
      throw new PostgresStoreException("PostgreSQL permit call on table " + table + " failed: "
          + e.getMessage(), e);
    }
  }

  // ------------------------------------------------------------------------------ permit groups

  /**
   * Grouped permits: rows of {@code <table>_group_permits}, each call one statement under an
   * advisory lock on the group.
   */
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
      deletePermits(resetGroupPermitsSql, prefix + group);
    } else {
      deletePermits(resetGroupMemberPermitsSql, prefix + group, prefix + key);
    }
  }

  private PermitReply groupPermit(int op, String group, String key, String permitId, int weight,
      int ceiling, PermitGroup terms, long leaseMillis) {
    return permitCall(groupPermitSql, p -> {
      p.setInt(1, op);
      p.setString(2, prefix + group);
      if (key == null) {
        p.setNull(3, Types.VARCHAR);
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

  /** {@link #apply} on one of this store's threads: the caller's thread never waits for JDBC. */
  @Override
  public CompletableFuture<Observation> applyAsync(String key,
      StoreRequest request) {
    return async.call(() -> apply(key, request));
  }

  /**
   * Fleet mode: records in {@code <table>_instances} that {@code instance} is alive and counts the
   * fleet's live instances, on the database clock, on one of this store's threads.
   */
  @Override
  public CompletableFuture<Integer> liveInstances(String fleet,
      String instance, long ttlMillis) {
    String fleetKey = prefix + fleet;
    return async.call(() -> {
        try (Connection c = dataSource.getConnection();
            PreparedStatement p = c.prepareStatement(
                "SELECT " + table + "_live_instances(?, ?, ?, ?)")) {
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
          throw new PostgresStoreException("PostgreSQL could not count the live instances of "
              + fleet + ": " + ex.getMessage(), ex);
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
    return "PostgresStore[" + table + "]";
  }

  /** Settings of a {@link PostgresStore}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String table = DEFAULT_TABLE;
    private boolean createIfMissing;
    private boolean unlogged;
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
     * {@code org.postgresql.ds.PGSimpleDataSource} with the pool's URL and credentials, and a
     * {@code connectTimeout}). After an outage a pool may wait out its own back-off before it
     * connects again (HikariCP 5: up to 5 s, not configurable), while the database already
     * answers. With this set, from the first decision the pool cannot serve in time until the
     * pool serves again, decisions use at most {@value RecoveryConnections#MOST} connections
     * opened from it (kept while needed), so decisions come back as soon as the database accepts
     * connections. Default: none.
     */
    public Builder recoveryDataSource(DataSource direct) {
      this.recoveryDataSource = Objects.requireNonNull(direct, "recoveryDataSource");
      return this;
    }

    /** The table (default {@value #DEFAULT_TABLE}); a plain lower-case identifier. */
    public Builder table(String table) {
      this.table = PostgresSchema.checkTable(table);
      return this;
    }

    /** Creates the table and its function at build() when missing (default: fail instead). */
    public Builder createIfMissing(boolean create) {
      this.createIfMissing = create;
      return this;
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
     * The longest a decision may take, all of it (default 200 ms): waiting behind other
     * decisions on the same key, getting a connection from the pool (whatever the pool's own
     * connection timeout), and the statement, which the driver cancels and whose row-lock wait
     * PostgreSQL ends when the time left runs out.
     */
    public Builder statementTimeout(Duration timeout) {
      this.timeout = JdbcSettings.statementTimeout(timeout);
      return this;
    }

    /** A prefix for every key in the table, e.g. {@code "api:"} (default none). */
    public Builder prefix(String prefix) {
      this.prefix = Objects.requireNonNull(prefix, "prefix");
      return this;
    }

    /**
     * Prunes expired rows every {@code every} on a daemon thread of the store's (default: only
     * when {@link PostgresStore#pruneExpired()} is called).
     */
    public Builder pruneEvery(Duration every) {
      this.pruneEvery = JdbcSettings.pruneEvery(every);
      return this;
    }

    /**
     * Whether this JVM sends a few decisions per key (4 per stripe of 1,024) at a time (default true):
     * on a hot key, threads then wait in the JVM rather than as database backends queued on one
     * row lock, which is what PostgreSQL handles worst. Turn off to let the database queue them.
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
     * {@code clock_timestamp()}; pruning uses it too.
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
    public PostgresStore build() {
      return new PostgresStore(this);
    }
  }
}

package dev.sluice.jdbc.store;

import dev.sluice.jdbc.AsyncCalls;
import dev.sluice.jdbc.BatchPruning;
import dev.sluice.jdbc.DeadlineConnections;
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
import java.util.function.Function;
import java.util.function.LongSupplier;
import javax.sql.DataSource;

/**
 * What Sluice's SQL stores ({@code PostgresStore}, {@code MysqlStore}) have in common: per-key
 * limits and permits in tables of one database, each decision and each permit call one round
 * trip decided in the database on its clock, within the store's timeout (waiting behind this
 * JVM's other decisions on the key, getting a connection, and the call, all of it), with
 * asynchronous calls on the store's own threads, pruning of expired rows, and the fleet's
 * registry of live instances. Each database supplies the calls themselves (its dialect: how a
 * decision and a permit call are sent and read, how rows are deleted); everything else is here,
 * once.
 *
 * <p>Takes connections from the given {@link DataSource} (any pool) for one call at a time and
 * never closes the DataSource. Thread-safe. Not meant to be extended outside Sluice.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#any-shared-store">docs/operations.md, "Any shared store"</a>.
 */
public abstract class JdbcStore implements DecisionStore, PermitStore {
  /** The table used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "sluice_buckets";
  /** Decisions on one key (one stripe) this JVM lets wait in the database at once. */
  private static final int IN_FLIGHT_PER_KEY = 4;
  private static final int STRIPES = 1024;

  private static final int PERMIT_ACQUIRE = PermitOperation.ACQUIRE.code();
  private static final int PERMIT_RENEW = PermitOperation.RENEW.code();
  private static final int PERMIT_RELEASE = PermitOperation.RELEASE.code();
  private static final int PERMIT_COUNT = PermitOperation.COUNT.code();
  private static final int PERMIT_CANCEL = PermitOperation.CANCEL.code();

  /** The rows a reset deletes; see {@link #delete}. */
  protected enum Rows {
    /** A key's bucket row: the values are the key. */
    BUCKET,
    /** A group member's row: the group and the member's key. */
    GROUP_MEMBER,
    /** A key's permits: the key. */
    PERMITS,
    /** A group's permits, every key's: the group. */
    GROUP_PERMITS,
    /** A group member's permits: the group and the member's key. */
    GROUP_MEMBER_PERMITS
  }

  /** Binds a call's leading arguments from index 1; answers the index of the next one. */
  @FunctionalInterface
  protected interface Arguments {
    int bind(PreparedStatement p) throws SQLException;
  }

  private final String product;
  private final DataSource dataSource;
  private final DeadlineConnections connections;
  private final String table;
  private final String prefix;
  private final LongSupplier micros;
  private final long timeoutMillis;
  private final long timeoutNanos;
  /** Where asynchronous calls run: JDBC blocks, and an asynchronous caller must not. */
  private final AsyncCalls async;
  /**
   * Decisions on one key from this JVM go to the database a few at a time: threads queue here,
   * cheaply, instead of as sessions waiting on the key in the database (striped by key hash).
   */
  private final Semaphore[] stripes;
  private final boolean combine;
  /** Deletes expired rows in batches: on a schedule, and when asked. */
  private final BatchPruning pruning;

  /**
   * A store of {@code b}'s settings on {@code product} (its name in messages: "PostgreSQL";
   * {@code shortName}, in its threads' names: "postgres"), whose schema is in place; {@code pruning} gives a table's statements that delete expired
   * rows (each takes the time in microseconds, NULL for the database's clock, and the batch
   * size), run at READ COMMITTED if {@code pruneReadCommitted}.
   */
  protected JdbcStore(Builder<?> b, String product, String shortName,
      Function<String, List<String>> pruning, boolean pruneReadCommitted) {
    this.product = Objects.requireNonNull(product, "product");
    this.dataSource = b.dataSource;
    this.table = b.table;
    this.prefix = b.prefix;
    this.micros = b.micros;
    this.timeoutMillis = b.timeout.toMillis();
    this.timeoutNanos = b.timeout.toNanos();
    this.combine = b.combine;
    String name = Objects.requireNonNull(shortName, "shortName");
    this.connections = new DeadlineConnections(dataSource, b.recoveryDataSource == null ? null
        : new RecoveryConnections(b.recoveryDataSource), product + " decision on table " + table,
        timeoutMillis);
    this.async = new AsyncCalls(b.asyncThreads, product + " store on table " + table,
        "sluice-" + name + "-async-" + table);
    this.stripes = new Semaphore[b.localQueue ? STRIPES : 0];
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Semaphore(IN_FLIGHT_PER_KEY);
    }
    this.pruning = new BatchPruning(dataSource, pruning.apply(table), micros, b.pruneBatch, b.pruneEvery,
        "sluice-" + name + "-prune-" + table, pruneReadCommitted,
        e -> failure(product + " pruning of table " + table + " failed: " + e.getMessage(), e));
  }

  // ------------------------------------------------------------------------------ dialect

  /**
   * One decision on {@code stateKey} (a prefixed key; or a prefixed group when {@code member} is
   * its key) by {@code deadline} ({@code System.nanoTime()}), this store's queue already passed.
   */
  protected abstract Observation decide(String stateKey, String member, StoreRequest request,
      long deadline);

  /**
   * One permit call by {@code deadline}: {@code sql} ({@link #permitSql}), its leading arguments
   * bound by {@code leading}, then the time ({@link #bindTime}); answers the call's reply.
   *
   * @throws SQLException as the driver threw it; {@link #callFailure} reads it
   */
  protected abstract PermitReply permitCall(String sql, Arguments leading, long deadline)
      throws SQLException;

  /** The permit call's SQL: of a key, or of a group's member when {@code grouped}. */
  protected abstract String permitSql(boolean grouped);

  /**
   * The call that records a fleet's live instance and counts them: its parameters the fleet, the
   * instance, the time to live in milliseconds and the time; its one column the count.
   */
  protected abstract String liveInstancesSql();

  /** Deletes {@code rows} of the given values, as a reset does (with the decisions' locking). */
  protected abstract void delete(Rows rows, String... values) throws SQLException;

  /** The database's own exception for a failure described by {@code message}. */
  protected abstract RuntimeException failure(String message, Throwable cause);

  /** Refuses a permit id the tables cannot hold (default: any is held). */
  protected void checkPermitId(String permitId) {}

  /** The SQL type a permit call's absent key is sent as (default VARCHAR). */
  protected int absentKeyType() {
    return Types.VARCHAR;
  }

  // ------------------------------------------------------------------------------ for dialects

  /** The table. */
  protected final String table() {
    return table;
  }

  /** The DataSource. */
  protected final DataSource dataSource() {
    return dataSource;
  }

  /** The store's timeout in milliseconds. */
  protected final long timeoutMillis() {
    return timeoutMillis;
  }

  /** The test clock in microseconds since the epoch, or null for the database's. */
  protected final LongSupplier testClock() {
    return micros;
  }

  /** A connection by {@code deadline}, from the pool or the recovery connections. */
  protected final Connection connection(long deadline) {
    return connections.get(deadline);
  }

  /** Binds the time at {@code at}: the test clock's, or NULL (the database's clock). */
  protected final void bindTime(PreparedStatement p, int at) throws SQLException {
    if (micros == null) {
      p.setNull(at, Types.BIGINT);
    } else {
      p.setLong(at, micros.getAsLong());
    }
  }

  /**
   * A failed call's exception: a lost connection (SQLSTATE class 08) is {@link
   * StoreUnavailableException}, anything else the database's own ({@link #failure}). A database
   * that knows more of its failures says so here.
   */
  protected RuntimeException callFailure(String what, SQLException e) {
    String state = e.getSQLState();
    if (state != null && state.startsWith("08")) {
      return new StoreUnavailableException(product + " " + what + " on table " + table
          + " failed: the connection was lost: " + e.getMessage(), e);
    }
    return failure(product + " " + what + " on table " + table + " failed: " + e.getMessage(), e);
  }

  /**
   * The request's arguments as integers separated by commas: every limit's, the count, and a
   * group's reserve.
   */
  protected static String arguments(StoreRequest r) {
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

  /** The milliseconds left until {@code deadline}, at least 1. */
  protected static long millisLeft(long deadline) {
    return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
  }

  // ------------------------------------------------------------------------------ decisions

  @Override
  public final long ticksPerSecond() {
    return 1_000_000L;
  }

  /**
   * One decision within the store's timeout, whichever part is slow: waiting behind other
   * decisions on the same key (in this JVM, then in the database), getting a connection from the
   * pool, or the call.
   */
  @Override
  public final Observation apply(String key, StoreRequest request) {
    return queued(prefix + key, null, request);
  }

  /** {@link #apply} on one of this store's threads: the caller's thread never waits for JDBC. */
  @Override
  public final CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
    return async.call(() -> apply(key, request));
  }

  /**
   * A group's decision: one call that holds the group and writes the key's row and the
   * parent's, in {@code <table>_groups}. Decisions of one group queue on it, so a group decides
   * about as fast as one hot key.
   */
  @Override
  public final Observation applyGroup(String group, String key, StoreRequest request) {
    if (!request.isGroup()) {
      throw new IllegalArgumentException("applyGroup needs a group's request");
    }
    return queued(prefix + group, key, request);
  }

  @Override
  public final CompletableFuture<Observation> applyGroupAsync(String group, String key,
      StoreRequest request) {
    return async.call(() -> applyGroup(group, key, request));
  }

  @Override
  public final boolean supportsGroups() {
    return true;
  }

  /** As the builder set ({@link Builder#combineDecisions}, on by default). */
  @Override
  public final boolean combinesDecisions() {
    return combine;
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
        throw failure(product + " decision on table " + table + " waited more than the store's"
            + " timeout (" + timeoutMillis + " ms) behind other decisions on the same key", null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failure("interrupted while waiting to decide on key " + stateKey, e);
    }
    try {
      return decide(stateKey, member, request, deadline);
    } finally {
      lock.release();
    }
  }

  @Override
  public final void reset(String key) {
    reset("reset", Rows.BUCKET, prefix + key);
  }

  @Override
  public final void resetGroupMember(String group, String key) {
    reset("reset", Rows.GROUP_MEMBER, prefix + group, key);
  }

  private void reset(String what, Rows rows, String... values) {
    try {
      delete(rows, values);
    } catch (SQLException e) {
      throw failure(product + " " + what + " on table " + table + " failed: " + e.getMessage(),
          e);
    }
  }

  /**
   * Checks within the store's timeout that a connection can be had and the database answers
   * ({@code Connection.isValid}); touches no key.
   */
  @Override
  public final void ping() {
    long deadline = System.nanoTime() + timeoutNanos;
    try (Connection c = connections.get(deadline)) {
      int seconds = (int) Math.max(1,
          (deadline - System.nanoTime() + 999_999_999L) / 1_000_000_000L);
      if (!c.isValid(seconds)) {
        throw new StoreUnavailableException(product + " does not answer (table " + table + ")",
            null);
      }
    } catch (SQLException e) {
      throw new StoreUnavailableException(product + " does not answer (table " + table + "): "
          + e.getMessage(), e);
    }
  }

  /**
   * Deletes rows whose {@code expires_at} has passed, in batches of the builder's {@link
   * Builder#pruneBatchSize}, each its own short statement that never waits for a decision.
   * Returns how many rows it deleted. Safe to call from any thread, at any time.
   */
  public final long pruneExpired() {
    return pruning.pruneExpired();
  }

  /** Rows deleted by pruning since this store was built. */
  public final long prunedRows() {
    return pruning.pruned();
  }

  // ------------------------------------------------------------------------------ permits

  /**
   * Takes a permit in {@code <table>_permits}: one call, one atomic step on the database clock
   * while holding the key; see {@link PermitStore}.
   */
  @Override
  public final PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return permit(PERMIT_ACQUIRE, key, permitId, weight, ceiling, leaseMillis);
  }

  /** {@link #acquire} on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> acquireAsync(String key, String permitId,
      int weight, int ceiling, long leaseMillis) {
    return async.call(() -> acquire(key, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public final PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
    return permit(PERMIT_RENEW, key, permitId, weight, 0, leaseMillis);
  }

  @Override
  public final PermitReply release(String key, String permitId, int weight) {
    return permit(PERMIT_RELEASE, key, permitId, weight, 0, 0);
  }

  /** {@link #release} on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> releaseAsync(String key, String permitId,
      int weight) {
    return async.call(() -> release(key, permitId, weight));
  }

  /**
   * Gives back a permit whose acquire's answer was lost: deletes it if held, and leaves a row of
   * weight 0 for its id until now plus the lease; see {@link PermitStore#cancel}.
   */
  @Override
  public final PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
    return permit(PERMIT_CANCEL, key, permitId, weight, 0, leaseMillis);
  }

  /** {@link #cancel} on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> cancelAsync(String key, String permitId,
      int weight, long leaseMillis) {
    return async.call(() -> cancel(key, permitId, weight, leaseMillis));
  }

  @Override
  public final int inFlight(String key) {
    return permit(PERMIT_COUNT, key, "", 1, 0, 0).inFlight();
  }

  @Override
  public final void resetPermits(String key) {
    reset("reset of permits", Rows.PERMITS, prefix + key);
  }

  private PermitReply permit(int op, String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    checkPermitId(permitId);
    return call(permitSql(false), p -> {
      p.setInt(1, op);
      p.setString(2, prefix + key);
      p.setString(3, permitId);
      p.setInt(4, weight);
      p.setInt(5, ceiling);
      p.setLong(6, leaseMillis);
      return 7;
    });
  }

  private PermitReply call(String sql, Arguments leading) {
    try {
      return permitCall(sql, leading, System.nanoTime() + timeoutNanos);
    } catch (SQLException e) {
      throw callFailure("permit call", e);
    }
  }

  // ------------------------------------------------------------------------------ permit groups

  /** Grouped permits: rows of {@code <table>_group_permits}, each call holding the group. */
  @Override
  public final boolean supportsPermitGroups() {
    return true;
  }

  @Override
  public final PermitReply acquire(PermitGroup group, String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return groupPermit(PERMIT_ACQUIRE, group.name(), key, permitId, weight, ceiling, group,
        leaseMillis);
  }

  /** The grouped acquire on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> acquireAsync(PermitGroup group, String key,
      String permitId, int weight, int ceiling, long leaseMillis) {
    return async.call(() -> acquire(group, key, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public final PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return groupPermit(PERMIT_RENEW, group, key, permitId, weight, 0, null, leaseMillis);
  }

  @Override
  public final PermitReply release(String group, String key, String permitId, int weight) {
    return groupPermit(PERMIT_RELEASE, group, key, permitId, weight, 0, null, 0);
  }

  /** The grouped release on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> releaseAsync(String group, String key,
      String permitId, int weight) {
    return async.call(() -> release(group, key, permitId, weight));
  }

  @Override
  public final PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return groupPermit(PERMIT_CANCEL, group, key, permitId, weight, 0, null, leaseMillis);
  }

  /** The grouped cancel on one of this store's threads. */
  @Override
  public final CompletableFuture<PermitReply> cancelAsync(String group, String key,
      String permitId, int weight, long leaseMillis) {
    return async.call(() -> cancel(group, key, permitId, weight, leaseMillis));
  }

  @Override
  public final int inFlight(String group, String key) {
    return groupPermit(PERMIT_COUNT, group, key, "", 1, 0, null, 0).inFlight();
  }

  @Override
  public final void resetPermits(String group, String key) {
    if (key == null) {
      reset("reset of permits", Rows.GROUP_PERMITS, prefix + group);
    } else {
      reset("reset of permits", Rows.GROUP_MEMBER_PERMITS, prefix + group, prefix + key);
    }
  }

  private PermitReply groupPermit(int op, String group, String key, String permitId, int weight,
      int ceiling, PermitGroup terms, long leaseMillis) {
    checkPermitId(permitId);
    return call(permitSql(true), p -> {
      p.setInt(1, op);
      p.setString(2, prefix + group);
      if (key == null) {
        p.setNull(3, absentKeyType());
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

  // ------------------------------------------------------------------------------ fleets

  /**
   * Fleet mode: records in {@code <table>_instances} that {@code instance} is alive and counts
   * the fleet's live instances, on the database clock, on one of this store's threads.
   */
  @Override
  public final CompletableFuture<Integer> liveInstances(String fleet, String instance,
      long ttlMillis) {
    String fleetKey = prefix + fleet;
    return async.call(() -> {
      try (Connection c = dataSource.getConnection();
          PreparedStatement p = c.prepareStatement(liveInstancesSql())) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        DeadlineConnections.timeout(p, timeoutMillis);
        p.setString(1, fleetKey);
        p.setString(2, instance);
        p.setLong(3, ttlMillis);
        bindTime(p, 4);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          return rs.getInt(1);
        }
      } catch (SQLException e) {
        throw failure(product + " could not count the live instances of " + fleet + ": "
            + e.getMessage(), e);
      }
    });
  }

  /** Stops scheduled pruning; the DataSource belongs to the caller and stays open. */
  @Override
  public final void close() {
    connections.close();
    async.close();
    pruning.close();
  }

  @Override
  public final String toString() {
    return getClass().getSimpleName() + "[" + table + "]";
  }

  /**
   * Settings of a SQL store; {@code B} is the database's own builder, which adds its own
   * settings and builds the store.
   */
  public abstract static class Builder<B extends Builder<B>> {
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

    /** Settings for a store on {@code dataSource}. */
    protected Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** This builder, as its own type. */
    protected abstract B self();

    /**
     * Refuses a name the database's schema cannot take, saying why; answers it otherwise.
     *
     * @throws IllegalArgumentException naming the table
     */
    protected abstract String checkTable(String table);

    /**
     * A DataSource that opens a new connection on each call, to the same database (the driver's
     * own DataSource with the pool's URL and credentials, and a connect timeout). After an
     * outage a pool may wait out its own back-off before it connects again (HikariCP 5: up to
     * 5 s, not configurable), while the database already answers. With this set, from the
     * first decision the pool cannot serve in time until the pool serves again, decisions use
     * at most {@value RecoveryConnections#MOST} connections opened from it (kept while needed),
     * so decisions come back as soon as the database accepts connections. Default: none.
     */
    public final B recoveryDataSource(DataSource direct) {
      this.recoveryDataSource = Objects.requireNonNull(direct, "recoveryDataSource");
      return self();
    }

    /** The table (default {@value JdbcStore#DEFAULT_TABLE}); a plain lower-case identifier. */
    public final B table(String table) {
      this.table = checkTable(table);
      return self();
    }

    /** Creates the tables and their functions at build() when missing (default: fail instead). */
    public final B createIfMissing(boolean create) {
      this.createIfMissing = create;
      return self();
    }

    /**
     * The longest a decision may take, all of it (default 200 ms, 1 ms to 1 hour): waiting
     * behind other decisions on the same key, getting a connection from the pool (whatever the
     * pool's own connection timeout), waiting for the key in the database, and the call, which
     * ends when the time left runs out.
     */
    public final B statementTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero() || timeout.toMillis() < 1
          || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("statementTimeout must be between 1 ms and 1 hour"
            + " but was " + timeout);
      }
      this.timeout = timeout;
      return self();
    }

    /** A prefix for every key in the tables, e.g. {@code "api:"} (default none). */
    public final B prefix(String prefix) {
      this.prefix = Objects.requireNonNull(prefix, "prefix");
      return self();
    }

    /**
     * Prunes expired rows every {@code every} (at least 1 ms) on a daemon thread of the store's
     * (default: only when {@link JdbcStore#pruneExpired()} is called).
     */
    public final B pruneEvery(Duration every) {
      Objects.requireNonNull(every, "every");
      if (every.toMillis() < 1) {
        throw new IllegalArgumentException("pruneEvery must be at least 1 ms but was " + every);
      }
      this.pruneEvery = every;
      return self();
    }

    /**
     * Whether this JVM sends a few decisions per key (4 per stripe of 1,024) at a time (default
     * true): on a hot key, threads then wait in the JVM rather than as database sessions queued
     * on one key, which is what databases handle worst. Turn off to let the database queue them.
     */
    public final B localQueue(boolean on) {
      this.localQueue = on;
      return self();
    }

    /**
     * Whether a limiter combines this JVM's {@code tryAcquire} calls on one key (default true):
     * while a call on the key is in flight, those that arrive behind it go as one call, a lease
     * of as many grains, decided at one reading of the database's clock exactly as the same
     * calls one after the other (buckets without a penalty; other limits are never combined).
     * On a hot key this answers many callers per round trip instead of one
     * ({@code docs/benchmarks.md}). Turn off to send every call.
     */
    public final B combineDecisions(boolean on) {
      this.combine = on;
      return self();
    }

    /**
     * Threads that run asynchronous calls ({@code tryAcquireAsync}, fleet mode's lease calls)
     * so that their callers never wait for JDBC (default 4; 1 to 256). Each holds one pooled
     * connection while it runs a call.
     */
    public final B asyncThreads(int threads) {
      if (threads < 1 || threads > 256) {
        throw new IllegalArgumentException("asyncThreads must be between 1 and 256 but was "
            + threads);
      }
      this.asyncThreads = threads;
      return self();
    }

    /** Rows deleted per pruning statement (default 1000; 1 to 1,000,000). */
    public final B pruneBatchSize(int rows) {
      if (rows < 1 || rows > 1_000_000) {
        throw new IllegalArgumentException("pruneBatchSize must be between 1 and 1000000 but was "
            + rows);
      }
      this.pruneBatch = rows;
      return self();
    }

    /**
     * Test hook: time in microseconds since the epoch comes from here instead of the
     * database's clock; pruning uses it too.
     */
    public final B timeSourceMicros(LongSupplier micros) {
      this.micros = Objects.requireNonNull(micros, "micros");
      return self();
    }

    /** The DataSource, for the database's builder. */
    protected final DataSource dataSource() {
      return dataSource;
    }

    /** The table, for the database's builder. */
    protected final String table() {
      return table;
    }

    /** Whether to create what is missing, for the database's builder. */
    protected final boolean createIfMissing() {
      return createIfMissing;
    }
  }
}

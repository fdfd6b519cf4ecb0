package dev.sluice.postgres;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.regex.Pattern;
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
public final class PostgresStore implements DecisionStore {
  /** The schema version this store needs; the table's comment says which one it has. */
  public static final int SCHEMA_VERSION = 5;
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
          "/dev/sluice/postgres/V5__sluice.sql");

  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,49}");
  private static final String VERSION_COMMENT = "sluice schema ";
  private static final int SERIALIZATION_RETRIES = 5;
  /** Decisions on one key (one stripe) this JVM lets wait in the database at once. */
  private static final int IN_FLIGHT_PER_KEY = 4;
  private static final ClassValue<Method> MILLIS_TIMEOUT = new ClassValue<>() {
    @Override
    protected Method computeValue(Class<?> type) {
      try {
        return type.getMethod("setQueryTimeoutMs", long.class);
      } catch (NoSuchMethodException e) {
        return null;
      }
    }
  };

  private final DataSource dataSource;
  /** Connections for decisions while the pool is stuck after an outage; null: none. */
  private final RecoveryConnections recovery;
  private final String table;
  private final String decideSql;
  private final String resetSql;
  private final String pruneSql;
  private final String decideGroupSql;
  private final String resetMemberSql;
  private final String pruneGroupsSql;
  private final String prefix;
  private final LongSupplier micros;
  private final long timeoutMillis;
  private final long timeoutNanos;
  private final int pruneBatch;
  private final int asyncThreads;
  private final ScheduledExecutorService pruner;
  private final AtomicLong pruned = new AtomicLong();
  /**
   * Decisions on one key from this JVM go to the database one at a time: threads queue here,
   * cheaply, instead of as backends waiting on the row lock (striped by key hash).
   */
  private final Semaphore[] stripes;

  private PostgresStore(Builder b) {
    this.dataSource = b.dataSource;
    this.recovery = b.recoveryDataSource == null ? null
        : new RecoveryConnections(b.recoveryDataSource);
    this.table = b.table;
    this.prefix = b.prefix;
    this.micros = b.micros;
    this.timeoutMillis = b.timeout.toMillis();
    this.timeoutNanos = b.timeout.toNanos();
    this.pruneBatch = b.pruneBatch;
    this.asyncThreads = b.asyncThreads;
    this.stripes = new Semaphore[b.localQueue ? 1024 : 0];
    for (int i = 0; i < stripes.length; i++) {
      stripes[i] = new Semaphore(IN_FLIGHT_PER_KEY);
    }
    this.decideSql = "SELECT " + table + "_decide(?, ?, ?, ?, ?::bigint[], ?)";
    this.decideGroupSql = "SELECT " + table + "_decide_group(?, ?, ?, ?, ?, ?::bigint[], ?)";
    this.resetMemberSql = "DELETE FROM " + table + "_groups WHERE grp = ? AND key = ?";
    this.pruneGroupsSql = "WITH victims AS (SELECT grp, key FROM " + table + "_groups"
        + " WHERE expires_at < COALESCE(to_timestamp(?::float8 / 1000000), clock_timestamp())"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + "_groups t USING victims"
        + " WHERE t.grp = victims.grp AND t.key = victims.key";
    this.resetSql = "DELETE FROM " + table + " WHERE key = ?";
    this.pruneSql = "WITH victims AS (SELECT key FROM " + table
        + " WHERE expires_at < COALESCE(to_timestamp(?::float8 / 1000000), clock_timestamp())"
        + " LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " DELETE FROM " + table + " t USING victims WHERE t.key = victims.key";
    prepareSchema(b.createIfMissing, b.unlogged);
    if (b.pruneEvery != null) {
      pruner = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-postgres-prune-" + table);
        t.setDaemon(true);
        return t;
      });
      long every = b.pruneEvery.toMillis();
      pruner.scheduleWithFixedDelay(() -> {
        try {
          pruneExpired();
        } catch (RuntimeException e) {
          // the next run tries again; pruning is housekeeping, decisions never depend on it
        }
      }, every, every, TimeUnit.MILLISECONDS);
    } else {
      pruner = null;
    }
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /**
   * The schema's SQL for {@code table} (the shipped {@code V1__sluice.sql} and
   * {@code V2__sluice.sql}, in order, with the name replaced), optionally creating the table
   * {@code UNLOGGED}. Idempotent.
   *
   * @throws IllegalArgumentException if {@code table} is not a plain lower-case identifier
   */
  public static String schemaSql(String table, boolean unlogged) {
    checkTable(table);
    StringBuilder all = new StringBuilder();
    for (String resource : SCHEMA_RESOURCES) {
      all.append(migrationSql(resource, table)).append('\n');
    }
    String sql = all.toString();
    return unlogged ? sql.replace("CREATE TABLE", "CREATE UNLOGGED TABLE") : sql;
  }

  private static String migrationSql(String resource, String table) {
    return template(resource).replace(DEFAULT_TABLE, table);
  }

  private static String template(String resource) {
    try (InputStream in = PostgresStore.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(resource + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String checkTable(String table) {
    if (table == null || !IDENTIFIER.matcher(table).matches()) {
      throw new IllegalArgumentException("table must be a lower-case SQL identifier of at most 50"
          + " characters ([a-z_][a-z0-9_]*; use the connection's search_path for a schema) but was "
          + (table == null ? "null" : "'" + table + "'"));
    }
    return table;
  }

  private void prepareSchema(boolean createIfMissing, boolean unlogged) {
    try (Connection c = dataSource.getConnection()) {
      String where = describe(c);
      int found = schemaVersion(c);
      if ((found == 0 || (found > 0 && found < SCHEMA_VERSION)) && createIfMissing) {
        boolean auto = c.getAutoCommit();
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          // Several instances may start at once: one creates, the others wait and find it.
          s.execute("SELECT pg_advisory_xact_lock(hashtext('sluice schema " + table + "'))");
          int now = schemaVersion(c);
          if (now == 0) {
            s.execute(schemaSql(table, unlogged));
          } else {
            // an older Sluice table: the migrations it lacks, in order
            for (int v = now; v > 0 && v < SCHEMA_VERSION; v++) {
              s.execute(migrationSql(SCHEMA_RESOURCES.get(v), table));
            }
          }
          c.commit();
        } catch (SQLException e) {
          c.rollback();
          throw e;
        } finally {
          c.setAutoCommit(auto);
        }
        found = schemaVersion(c);
      }
      if (found == 0) {
        throw new IllegalStateException("table " + table + " does not exist in " + where
            + ": create it with the SQL in " + SCHEMA_RESOURCE.substring(1)
            + " (PostgresStore.schemaSql(\"" + table + "\", false) gives it for this name;"
            + " Flyway or Liquibase can run it), or call createIfMissing(true) on the builder");
      }
      if (found < 0) {
        throw new IllegalStateException("table " + table + " in " + where + " is not a Sluice"
            + " table (its comment does not say 'sluice schema N'); choose another name with"
            + " table(...)");
      }
      if (found != SCHEMA_VERSION) {
        throw new IllegalStateException("table " + table + " in " + where + " has Sluice schema"
            + " version " + found + " but this Sluice needs version " + SCHEMA_VERSION
            + (found < SCHEMA_VERSION ? ": apply " + SCHEMA_RESOURCES.subList(found, SCHEMA_VERSION)
                + " from the jar (Flyway or Liquibase run them in order), or call"
                + " createIfMissing(true) on the builder" : ""));
      }
      try (PreparedStatement p = c.prepareStatement(
          "SELECT to_regprocedure(? || '_decide(text,integer,bigint,text,bigint[],integer)')")) {
        p.setString(1, table);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          if (rs.getString(1) == null) {
            throw new IllegalStateException("table " + table + " in " + where + " has schema"
                + " version " + found + " but its function " + table + "_decide is missing:"
                + " run the schema SQL again (it is idempotent)");
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL refused the store (table " + table + "): "
          + e.getMessage(), e);
    }
  }

  private static String describe(Connection c) {
    try {
      return "database " + c.getCatalog() + " at " + c.getMetaData().getURL();
    } catch (SQLException e) {
      return "the database";
    }
  }

  /** 0: no table; -1: a table that is not Sluice's; else the version its comment names. */
  private int schemaVersion(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(
        "SELECT to_regclass(?) IS NOT NULL, obj_description(to_regclass(?), 'pg_class')")) {
      p.setString(1, table);
      p.setString(2, table);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return 0;
        }
        String comment = rs.getString(2);
        if (comment == null || !comment.startsWith(VERSION_COMMENT)) {
          return -1;
        }
        try {
          return Integer.parseInt(comment.substring(VERSION_COMMENT.length()).trim());
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
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
    return async(() -> applyGroup(group, key, request));
  }

  @Override
  public boolean supportsGroups() {
    return true;
  }

  @Override
  public void resetGroupMember(String group, String key) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(resetMemberSql)) {
        timeout(p, timeoutMillis);
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
        stripes[(stateKey.hashCode() * 0x9E3779B9 >>> 22) & (stripes.length - 1)];
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

  /**
   * A connection from the pool by {@code deadline}: the pool's own wait (HikariCP's
   * connectionTimeout) is cut short there.
   */
  private Connection connection(long deadline) {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new StoreUnavailableException("PostgreSQL decision on table " + table + ": no time"
          + " left within the store's timeout (" + timeoutMillis + " ms) to get a connection", null);
    }
    Connection c = null;
    SQLException failure = null;
    if (recovery == null || recovery.tryPool()) {
      // stalled, the pool is only probed: a short wait, so that the decision can still take a
      // recovery connection
      boolean probe = recovery != null && recovery.stalled();
      Deadline guard = Deadline.arm(probe ? Math.min(left, RecoveryConnections.PROBE_WAIT_NANOS)
          : left);
      try {
        c = dataSource.getConnection();
      } catch (SQLException e) {
        failure = e;
      } finally {
        guard.disarm();   // a connection that came just as the deadline passed is used all the same
      }
      if (recovery != null) {
        if (c != null) {
          recovery.poolRecovered();
        } else {
          recovery.poolFailed();
        }
      }
    }
    if (c == null && recovery != null && recovery.stalled()) {
      Deadline guard = Deadline.arm(Math.max(0, deadline - System.nanoTime()));
      try {
        c = recovery.connection(deadline);
      } catch (SQLException e) {
        failure = e;
      } finally {
        guard.disarm();
      }
    }
    if (c != null) {
      return c;
    }
    throw new StoreUnavailableException("PostgreSQL decision on table " + table + ": no"
        + " connection within the store's timeout (" + timeoutMillis + " ms): "
        + (failure == null ? "the pool gave none" : failure.getMessage()), failure);
  }

  private Observation decide(String stateKey, String member, StoreRequest request,
      long deadline) {
    String args = args(request);
    SQLException last = null;
    for (int attempt = 0; attempt < SERIALIZATION_RETRIES; attempt++) {
      try (Connection c = connection(deadline)) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
        try (PreparedStatement p = c.prepareStatement(member == null ? decideSql : decideGroupSql)) {
          timeout(p, leftMillis);
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

  private void timeout(PreparedStatement p, long millisLeft) throws SQLException {
    Statement raw = p.isWrapperFor(Statement.class) ? p.unwrap(Statement.class) : p;
    Method millis = MILLIS_TIMEOUT.get(raw.getClass());
    if (millis != null) {
      try {
        millis.invoke(raw, millisLeft);
        return;
      } catch (ReflectiveOperationException | RuntimeException e) {
        // fall back to the standard, whole-second timeout
      }
    }
    p.setQueryTimeout((int) Math.max(1, (millisLeft + 999) / 1000));
  }

  /**
   * Checks within the store's timeout that a connection can be had and the database answers
   * ({@code Connection.isValid}); touches no key.
   */
  @Override
  public void ping() {
    long deadline = System.nanoTime() + timeoutNanos;
    try (Connection c = connection(deadline)) {
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
        timeout(p, timeoutMillis);
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
    long total = 0;
    for (String sql : new String[] {pruneSql, pruneGroupsSql}) {
      while (true) {
        int n = pruneBatch(sql);
        total += n;
        if (n < pruneBatch) {
          break;
        }
      }
    }
    pruned.addAndGet(total);
    return total;
  }

  private int pruneBatch(String sql) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement p = c.prepareStatement(sql)) {
        if (micros == null) {
          p.setNull(1, Types.BIGINT);
        } else {
          p.setLong(1, micros.getAsLong());
        }
        p.setInt(2, pruneBatch);
        return p.executeUpdate();
      }
    } catch (SQLException e) {
      throw new PostgresStoreException("PostgreSQL pruning of table " + table + " failed: "
          + e.getMessage(), e);
    }
  }

  /** Rows deleted by pruning since this store was built. */
  public long prunedRows() {
    return pruned.get();
  }

  /**
   * Where asynchronous calls run (JDBC blocks, and an asynchronous caller must not): created on
   * first use, {@code asyncThreads} daemon threads, all started at once and kept, taking calls
   * from a lock-free queue; at most {@value #ASYNC_QUEUE} calls wait, past which a call fails as
   * an unavailable store would. Handing a call over never parks the caller, even when many
   * event-loop threads hand calls over at once: no lock is taken on the way in (no worker is
   * created, and the queue is a {@code LinkedTransferQueue}).
   */
  private volatile ThreadPoolExecutor async;
  private final AtomicInteger asyncWaiting =
      new AtomicInteger();
  private static final int ASYNC_QUEUE = 10_000;

  private ThreadPoolExecutor async() {
    ThreadPoolExecutor e = async;
    if (e == null) {
      synchronized (this) {
        e = async;
        if (e == null) {
          AtomicInteger n = new AtomicInteger();
          e = new ThreadPoolExecutor(asyncThreads, asyncThreads, 0,
              TimeUnit.SECONDS, new LinkedTransferQueue<>(), r -> {
                Thread t = new Thread(r, "sluice-postgres-async-" + table + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
              });
          e.prestartAllCoreThreads();
          async = e;
        }
      }
    }
    return e;
  }

  private <T> CompletableFuture<T> async(Supplier<T> call) {
    if (asyncWaiting.incrementAndGet() > ASYNC_QUEUE) {
      asyncWaiting.decrementAndGet();
      return CompletableFuture.failedFuture(new StoreUnavailableException(
          "PostgreSQL store on table " + table + ": " + ASYNC_QUEUE + " asynchronous calls are"
              + " already waiting", null));
    }
    try {
      return CompletableFuture.supplyAsync(() -> {
        asyncWaiting.decrementAndGet();
        return call.get();
      }, async());
    } catch (RejectedExecutionException closed) {
      asyncWaiting.decrementAndGet();
      return CompletableFuture.failedFuture(new StoreUnavailableException(
          "PostgreSQL store on table " + table + " is closed", closed));
    }
  }

  /** {@link #apply} on one of this store's threads: the caller's thread never waits for JDBC. */
  @Override
  public CompletableFuture<Observation> applyAsync(String key,
      StoreRequest request) {
    return async(() -> apply(key, request));
  }

  /**
   * Fleet mode: records in {@code <table>_instances} that {@code instance} is alive and counts the
   * fleet's live instances, on the database clock, on one of this store's threads.
   */
  @Override
  public CompletableFuture<Integer> liveInstances(String fleet,
      String instance, long ttlMillis) {
    String fleetKey = prefix + fleet;
    return async(() -> {
        try (Connection c = dataSource.getConnection();
            PreparedStatement p = c.prepareStatement(
                "SELECT " + table + "_live_instances(?, ?, ?, ?)")) {
          timeout(p, timeoutMillis);
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
    if (recovery != null) {
      recovery.close();
    }
    if (async != null) {
      async.shutdownNow();
    }
    if (pruner != null) {
      pruner.shutdownNow();
    }
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
      this.table = checkTable(table);
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
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero() || timeout.toMillis() < 1
          || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("statementTimeout must be between 1 ms and 1 hour but was "
            + timeout);
      }
      this.timeout = timeout;
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
      Objects.requireNonNull(every, "every");
      if (every.toMillis() < 1) {
        throw new IllegalArgumentException("pruneEvery must be at least 1 ms but was " + every);
      }
      this.pruneEvery = every;
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
     * Threads that run asynchronous calls ({@code tryAcquireAsync}, fleet mode's lease calls)
     * so that their callers never wait for JDBC (default 4; 1 to 256). Each holds one pooled
     * connection while it runs a call.
     */
    public Builder asyncThreads(int threads) {
      if (threads < 1 || threads > 256) {
        throw new IllegalArgumentException("asyncThreads must be between 1 and 256 but was " + threads);
      }
      this.asyncThreads = threads;
      return this;
    }

    /** Rows deleted per pruning statement (default 1000). */
    public Builder pruneBatchSize(int rows) {
      if (rows < 1 || rows > 1_000_000) {
        throw new IllegalArgumentException("pruneBatchSize must be between 1 and 1000000 but was "
            + rows);
      }
      this.pruneBatch = rows;
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

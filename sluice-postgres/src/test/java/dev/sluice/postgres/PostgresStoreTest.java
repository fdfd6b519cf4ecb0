package dev.sluice.postgres;

import dev.sluice.testkit.CombinedCallsCheck;
import dev.sluice.testkit.Ports;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class PostgresStoreTest {
  private static final long T0 = 1_700_000_000_000_000L;   // µs since the epoch (Nov 2023)

  private static String freshTable() {
    return "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  private static void sql(String statement) throws SQLException {
    try (Connection c = TestPostgres.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private static Object[] row(String table, String key) throws SQLException {
    try (Connection c = TestPostgres.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT layout, state::text, "
            + "(extract(epoch FROM expires_at) * 1000000)::bigint, xmin::text FROM " + table + " WHERE key = ?")) {
      p.setString(1, key);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? new Object[] {rs.getString(1), rs.getString(2), rs.getLong(3), rs.getString(4)} : null;
      }
    }
  }

  @Test
  void missingTable_withoutCreateIfMissing_saysHowToCreateIt() {
    String table = freshTable();
    assertThatThrownBy(() -> PostgresStore.builder(TestPostgres.dataSource()).table(table).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("table " + table + " does not exist")
        .hasMessageContaining("dev/sluice/postgres/B9__sluice.sql")
        .hasMessageContaining("V1__ to V9__sluice.sql")
        .hasMessageContaining("createIfMissing(true)");
  }

  @Test
  void otherSchemaVersion_namesTheVersionFoundAndNeeded() throws SQLException {
    String table = freshTable();
    sql("CREATE TABLE " + table + " (key text PRIMARY KEY)");
    sql("COMMENT ON TABLE " + table + " IS 'sluice schema 99'");
    assertThatThrownBy(() -> PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has Sluice schema version 99 but this Sluice needs version "
            + PostgresStore.SCHEMA_VERSION);
  }

  /**
   * Schema 2 (exact buckets) replaces the decide function of a version-1 table: refused with the
   * file to apply, or migrated by createIfMissing(true); the migrated table decides exactly.
   */
  @Test
  void versionOneTable_namesTheMigration_orIsMigratedByCreateIfMissing() throws Exception {
    String table = freshTable();
    String v1;
    try (InputStream in = PostgresStore.class.getResourceAsStream(PostgresStore.SCHEMA_RESOURCE)) {
      v1 = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    sql(v1.replace(PostgresStore.DEFAULT_TABLE, table));
    assertThatThrownBy(() -> PostgresStore.builder(TestPostgres.dataSource()).table(table).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has Sluice schema version 1 but this Sluice needs version 9")
        .hasMessageContaining("apply [/dev/sluice/postgres/V2__sluice.sql, /dev/sluice/postgres/V3__sluice.sql, /dev/sluice/postgres/V4__sluice.sql, /dev/sluice/postgres/V5__sluice.sql, /dev/sluice/postgres/V6__sluice.sql, /dev/sluice/postgres/V7__sluice.sql, /dev/sluice/postgres/V8__sluice.sql, /dev/sluice/postgres/V9__sluice.sql]");
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
        .timeSourceMicros(() -> 1_000_000L).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(3, Rate.perSecond(1.5)))
        .store(store).build();
    l.fillUp("k", 1);
    l.fillUp("k", 1);
    assertThat(l.fillUp("k", 1).reachedCapacity()).isTrue();
    RateLimiter group = Sluice.builder().group(dev.sluice.Group.sharing(
        Limit.leakyBucket(2, Rate.perSecond(1))).assured(Limit.leakyBucket(1, Rate.perSecond(1))))
        .store(store).build();
    assertThat(group.tryAcquire("k").isAllowed()).as("schema 4's group function").isTrue();
    assertThat(group.tryAcquire("k").isAllowed()).isFalse();
    PostgresStore.builder(TestPostgres.dataSource()).table(table).build();   // version 6 now
  }

  @Test
  void someoneElsesTable_isNotTaken() throws SQLException {
    String table = freshTable();
    sql("CREATE TABLE " + table + " (id int)");
    assertThatThrownBy(() -> PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is not a Sluice table");
  }

  @Test
  void tableNames_areIdentifiersOnly() {
    for (String bad : new String[] {"x'; DROP TABLE users; --", "public.t", "", "1abc", "Upper",
        "a b", "x".repeat(51)}) {
      assertThatThrownBy(() -> PostgresStore.builder(TestPostgres.dataSource()).table(bad))
          .as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("but was '" + bad + "'");
    }
    assertThatThrownBy(() -> PostgresStore.schemaSql("t;drop", false))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'t;drop'");
  }

  @Test
  void builderSettings_areValidated() {
    PostgresStore.Builder b = PostgresStore.builder(TestPostgres.dataSource());
    assertThatThrownBy(() -> b.statementTimeout(Duration.ZERO))
        .hasMessageContaining("statementTimeout must be between 1 ms and 1 hour but was PT0S");
    assertThatThrownBy(() -> b.pruneBatchSize(0))
        .hasMessageContaining("pruneBatchSize must be between 1 and 1000000 but was 0");
    assertThatThrownBy(() -> b.pruneEvery(Duration.ofNanos(5)))
        .hasMessageContaining("pruneEvery must be at least 1 ms");
    assertThatThrownBy(() -> b.asyncThreads(0))
        .hasMessageContaining("asyncThreads must be between 1 and 256 but was 0");
    assertThatThrownBy(() -> PostgresStore.builder(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void asynchronousCalls_neverRunOnTheCallersThread() throws Exception {
    java.util.List<String> threads = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    javax.sql.DataSource recording = (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {javax.sql.DataSource.class}, (proxy, m, args) -> {
          if (m.getName().equals("getConnection")) {
            threads.add(Thread.currentThread().getName());
          }
          return m.invoke(TestPostgres.dataSource(), args);
        });
    PostgresStore store = PostgresStore.builder(recording).table(freshTable()).createIfMissing(true)
        .build();
    try {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).store(store).build();
      threads.clear();
      assertThat(l.tryAcquireAsync("k", 1).get(10, java.util.concurrent.TimeUnit.SECONDS).isAllowed()).isTrue();
      assertThat(store.liveInstances("f", "a", 1000).get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(1);
      assertThat(threads).hasSize(2).allMatch(t -> t.startsWith("sluice-postgres-async-"));
    } finally {
      store.close();
    }
  }

  @Test
  void unreachableDatabase_failsAtBuildNamingTheServer() throws Exception {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    int port = Ports.free();
    ds.setUrl("jdbc:postgresql://127.0.0.1:" + port + "/postgres?connectTimeout=2");
    long start = System.nanoTime();
    assertThatThrownBy(() -> PostgresStore.builder(ds).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("127.0.0.1:" + port);
    assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(10));
  }

  @Test
  void shippedSchema_isTheResource_andCreateIfMissingIsIdempotent() throws Exception {
    String shipped;
    try (InputStream in = PostgresStore.class.getResourceAsStream(PostgresStore.BASELINE_RESOURCE)) {
      shipped = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(PostgresStore.schemaSql(PostgresStore.DEFAULT_TABLE, false)).isEqualTo(shipped);
    assertThat(PostgresStore.schemaSql("limits", true))
        .contains("CREATE UNLOGGED TABLE IF NOT EXISTS limits (")
        .contains("FUNCTION limits_decide(").doesNotContain("sluice_buckets");
    String table = freshTable();
    PostgresStore.builder(TestPostgres.dataSource()).table(table).createIfMissing(true).build();
    PostgresStore.builder(TestPostgres.dataSource()).table(table).createIfMissing(true).build();
    PostgresStore.builder(TestPostgres.dataSource()).table(table).build();   // found, no create
    assertThat(persistence(table)).isEqualTo("p");
    String unlogged = freshTable();
    PostgresStore.builder(TestPostgres.dataSource()).table(unlogged).createIfMissing(true)
        .unlogged(true).build();
    assertThat(persistence(unlogged)).isEqualTo("u");
  }

  private static String persistence(String table) throws SQLException {
    try (Connection c = TestPostgres.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT relpersistence FROM pg_class WHERE oid = to_regclass(?)")) {
      p.setString(1, table);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  @Test
  void stateLivesInTypedColumns_expiresWhenEmpty_andRejectionsWriteNothing() throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1))).store(store).build();
    assertThat(l.check("k").isAllowed()).isTrue();
    assertThat(row(table, "k")).as("a check writes nothing").isNull();
    assertThat(l.tryAcquire("k", 1.5).isAllowed()).isTrue();
    Object[] r = row(table, "k");
    assertThat(r[0]).isEqualTo("b");
    assertThat(r[1]).isEqualTo("{" + (T0 + 1_500_000) + "}");
    // empty 1.5 s from now; expires_at is rounded up past it to a whole second
    assertThat((Long) r[2]).isGreaterThanOrEqualTo(T0 + 1_500_000).isLessThanOrEqualTo(T0 + 2_500_000);
    String xmin = (String) r[3];
    Decision rejected = l.tryAcquire("k", 1);
    assertThat(rejected.isAllowed()).isFalse();
    assertThat(row(table, "k")[3]).as("a rejection leaves the row version alone").isEqualTo(xmin);
    l.check("k");
    assertThat(row(table, "k")[3]).isEqualTo(xmin);
    l.reset("k");
    assertThat(row(table, "k")).isNull();
  }

  @Test
  void severalLimits_shareOneRow() throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).prefix("api:").build();
    RateLimiter l = Sluice.builder().limits(Limit.leakyBucket(5, Rate.perSecond(5)),
        Limit.slidingWindow(3, Duration.ofSeconds(10))).store(store).build();
    for (int i = 0; i < 3; i++) {
      assertThat(l.tryAcquire("u").isAllowed()).isTrue();
    }
    assertThat(l.tryAcquire("u").isAllowed()).isFalse();
    Object[] r = row(table, "api:u");
    assertThat(r[0]).isEqualTo("bs");
    assertThat((String) r[1]).startsWith("{" + (T0 + 600_000) + ",");
  }

  @Test
  void aKeyStoredUnderOtherLimits_restartsFromEmpty() throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).build();
    RateLimiter two = Sluice.builder().limits(Limit.leakyBucket(1, Rate.perSecond(1)),
        Limit.fixedWindow(5, Duration.ofMinutes(1))).store(store).build();
    RateLimiter one = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1))).store(store).build();
    assertThat(two.tryAcquire("k").isAllowed()).isTrue();
    assertThat(row(table, "k")[0]).isEqualTo("bf");
    // the single-bucket path reads a row it does not own as empty, checks without writing ...
    assertThat(one.check("k").remaining()).isEqualTo(1.0);
    assertThat(row(table, "k")[0]).isEqualTo("bf");
    // ... and takes it over when it admits
    assertThat(one.tryAcquire("k").isAllowed()).isTrue();
    assertThat(row(table, "k")[0]).isEqualTo("b");
    assertThat(one.tryAcquire("k").isAllowed()).isFalse();
    // and the general path does the same the other way round
    assertThat(two.tryAcquire("k").isAllowed()).isTrue();
    assertThat(row(table, "k")[0]).isEqualTo("bf");
  }

  @Test
  void keysUpToTheLimit_areStored_andKeysPostgresCannotHold_areRefusedBeforeIt() throws Exception {
    String table = freshTable();
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestPostgres.SEMANTICS_TIMEOUT)
        .prefix("some-application:").build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perMinute(1))).store(store).build();
    String longest = "\ud83d\ude00".repeat(256);            // 1,024 bytes of UTF-8, all indexed
    assertThat(l.tryAcquire(longest).isAllowed()).isTrue();
    assertThat(l.tryAcquire(longest).isAllowed()).isFalse();
    assertThat(row(table, "some-application:" + longest)).isNotNull();
    for (String bad : new String[] {"a\u0000b", "\udc00", longest + "x"}) {
      assertThatThrownBy(() -> l.tryAcquire(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(l.stats().storeErrors()).isZero();
  }

  @Test
  void connectionsWithoutAutoCommit_stillCommitEachDecision() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestPostgres.url());
    config.setAutoCommit(false);
    config.setMaximumPoolSize(2);
    try (HikariDataSource manual = new HikariDataSource(config)) {
      String table = freshTable();
      PostgresStore store = PostgresStore.builder(manual).table(table).createIfMissing(true).build();
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).store(store).build();
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
      assertThat(row(table, "k")).as("visible to another connection").isNotNull();
      assertThat(l.tryAcquire("k").isAllowed()).isFalse();
      assertThat(l.stats().storeErrors()).isZero();
    }
  }

  /**
   * Callers behind a call in flight on a held key are combined: each waits for the call in flight
   * and its batch's call, each bounded by the timeout; the failures count per call, not per
   * caller; nothing is charged.
   */
  @Test
  void combinedCallersBehindAHeldKey_failWithinTwoTimeouts_countedPerCall_andChargeNothing()
      throws Exception {
    String table = freshTable();
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(Duration.ofMillis(100)).build();
    assertThat(store.combinesDecisions()).as("on by default").isTrue();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    try (Connection holder = TestPostgres.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT * FROM " + table + " WHERE key = 'k' FOR UPDATE");
      }
      CombinedCallsCheck.callersBehindAHeldKey(l, "k", () -> {
        CombinedCallsCheck.awaitNoSessionWaiting(holder,
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
        holder.rollback();
      });
    }
  }

  @Test
  void aRowLockedPastTheTimeout_failsThisDecisionWithinTheTimeout() throws Exception {
    String table = freshTable();
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(Duration.ofMillis(100)).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    DataSource ds = TestPostgres.dataSource();
    try (Connection holder = ds.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT * FROM " + table + " WHERE key = 'k' FOR UPDATE");
      }
      long start = System.nanoTime();
      Decision d = l.tryAcquire("k");
      long took = System.nanoTime() - start;
      assertThat(d.isDegraded()).isTrue();
      assertThat(d.isAllowed()).as("fail open").isTrue();
      assertThat(took).as("bounded by the timeout, not by the lock holder")
          .isLessThan(TimeUnit.SECONDS.toNanos(2));
      assertThat(l.tryAcquire("other").isDegraded()).as("other keys are not held").isFalse();
      holder.rollback();
    }
    assertThat(l.stats().storeErrors()).isEqualTo(1);
    assertThat(row(table, "k")[1]).as("the failed decision charged nothing").isNotNull();
    Decision after = l.check("k", 9);
    assertThat(after.isAllowed()).as("one charge, not two").isTrue();
  }
}

package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.testkit.CombinedCallsCheck;
import dev.sluice.testkit.Ports;
import java.io.InputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.mariadb.jdbc.MariaDbDataSource;

class MysqlStoreTest {
  private static final long T0 = 1_700_000_000_000_000L;   // µs since the epoch (Nov 2023)

  private static String freshTable() {
    return "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  private static void sql(String statement) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private static long count(String sql) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** {layout, state, expires_at} of a key's row, or null. */
  private static Object[] row(String table, String key) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(
            "SELECT layout, state, expires_at FROM " + table + " WHERE k = ?")) {
      p.setString(1, key);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? new Object[] {rs.getString(1), rs.getString(2), rs.getLong(3)} : null;
      }
    }
  }

  /**
   * Counts every change to {@code table} in {@code <table>_writes}, by triggers: rows inserted or
   * deleted, and updates that change a column (an {@code ON DUPLICATE KEY UPDATE} that sets the
   * values the row holds leaves it as it is, and fires the update's triggers all the same).
   */
  private static void countWrites(String table) throws SQLException {
    sql("CREATE TABLE " + table + "_writes (n INT NOT NULL)");
    sql("INSERT INTO " + table + "_writes VALUES (0)");
    for (String event : new String[] {"INSERT", "DELETE"}) {
      sql("CREATE TRIGGER " + table + "_" + event.toLowerCase() + " AFTER " + event + " ON "
          + table + " FOR EACH ROW UPDATE " + table + "_writes SET n = n + 1");
    }
    sql("CREATE TRIGGER " + table + "_update AFTER UPDATE ON " + table + " FOR EACH ROW UPDATE "
        + table + "_writes SET n = n + IF(OLD.layout <=> NEW.layout AND OLD.state <=> NEW.state"
        + " AND OLD.expires_at <=> NEW.expires_at, 0, 1)");
  }

  @Test
  void missingTable_withoutCreateIfMissing_saysHowToCreateIt() {
    String table = freshTable();
    assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(table).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("table " + table + " does not exist")
        .hasMessageContaining("dev/sluice/mysql/V1__sluice.sql")
        .hasMessageContaining("createIfMissing(true)");
  }

  @Test
  void otherSchemaVersion_namesTheVersionFoundAndNeeded() throws SQLException {
    String table = freshTable();
    sql("CREATE TABLE " + table + " (k INT PRIMARY KEY) COMMENT='sluice schema 9'");
    assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has Sluice schema version 9 but this Sluice needs version "
            + MysqlStore.SCHEMA_VERSION);
  }

  @Test
  void someoneElsesTable_isNotTaken() throws SQLException {
    String table = freshTable();
    sql("CREATE TABLE " + table + " (id INT)");
    assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is not a Sluice table");
  }

  @Test
  void aTableWhoseProceduresWereDropped_isNamed() throws SQLException {
    String table = freshTable();
    MysqlStore.builder(TestMysql.dataSource()).table(table).createIfMissing(true).build();
    sql("DROP PROCEDURE " + table + "_decide");
    assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(table).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("procedures (" + table + "_decide and the others) are missing")
        .hasMessageContaining("run the schema SQL again");
    MysqlStore.builder(TestMysql.dataSource()).table(table).createIfMissing(true).build();
    MysqlStore.builder(TestMysql.dataSource()).table(table).build();   // whole again
  }

  @Test
  void tableNames_areIdentifiersOnly() {
    for (String bad : new String[] {"x'; DROP TABLE users; --", "db.t", "", "1abc", "Upper",
        "a b", "x".repeat(37)}) {
      assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(bad))
          .as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("but was '" + bad + "'");
    }
    assertThatThrownBy(() -> MysqlStore.schemaSql("t;drop"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'t;drop'");
  }

  @Test
  void builderSettings_areValidated() {
    MysqlStore.Builder b = MysqlStore.builder(TestMysql.dataSource());
    assertThatThrownBy(() -> b.statementTimeout(Duration.ZERO))
        .hasMessageContaining("statementTimeout must be between 1 ms and 1 hour but was PT0S");
    assertThatThrownBy(() -> b.pruneBatchSize(0))
        .hasMessageContaining("pruneBatchSize must be between 1 and 1000000 but was 0");
    assertThatThrownBy(() -> b.pruneEvery(Duration.ofNanos(5)))
        .hasMessageContaining("pruneEvery must be at least 1 ms");
    assertThatThrownBy(() -> b.asyncThreads(0))
        .hasMessageContaining("asyncThreads must be between 1 and 256 but was 0");
    assertThatThrownBy(() -> MysqlStore.builder(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void aUrlWithoutADatabase_isRefusedSayingSo() throws SQLException {
    String server = TestMysql.url().replaceFirst("/sluice\\?", "/?");
    MariaDbDataSource ds = new MariaDbDataSource(server);
    assertThatThrownBy(() -> MysqlStore.builder(ds).createIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has no database: name one in the JDBC URL");
  }

  @Test
  void asynchronousCalls_neverRunOnTheCallersThread() throws Exception {
    List<String> threads = Collections.synchronizedList(new ArrayList<>());
    DataSource recording = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {DataSource.class}, (proxy, m, args) -> {
          if (m.getName().equals("getConnection")) {
            threads.add(Thread.currentThread().getName());
          }
          return m.invoke(TestMysql.dataSource(), args);
        });
    MysqlStore store = MysqlStore.builder(recording).table(freshTable()).createIfMissing(true)
        .build();
    try {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).store(store)
          .build();
      threads.clear();
      assertThat(l.tryAcquireAsync("k", 1).get(10, TimeUnit.SECONDS).isAllowed()).isTrue();
      assertThat(store.liveInstances("f", "a", 1000).get(10, TimeUnit.SECONDS)).isEqualTo(1);
      assertThat(threads).hasSize(2).allMatch(t -> t.startsWith("sluice-mysql-async-"));
    } finally {
      store.close();
    }
  }

  @Test
  void unreachableDatabase_failsAtBuildNamingTheServer() throws Exception {
    int port = Ports.free();
    MariaDbDataSource ds = new MariaDbDataSource(
        "jdbc:mariadb://127.0.0.1:" + port + "/sluice?connectTimeout=2000");
    long start = System.nanoTime();
    assertThatThrownBy(() -> MysqlStore.builder(ds).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("127.0.0.1:" + port);
    assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(10));
  }

  /**
   * A version-1 table (before cancelled permits): refused with the file to apply, or migrated by
   * createIfMissing(true), after which a cancel makes a later acquire of its id take nothing.
   */
  @Test
  void versionOneTable_namesTheMigration_orIsMigratedByCreateIfMissing() throws Exception {
    String table = freshTable();
    try (Connection c = TestMysql.dataSource().getConnection();
        Statement st = c.createStatement()) {
      for (String statement : MysqlSchema.statements(
          MysqlSchema.migration(MysqlStore.SCHEMA_RESOURCE, table))) {
        st.execute(statement);
      }
    }
    assertThatThrownBy(() -> MysqlStore.builder(TestMysql.dataSource()).table(table).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has Sluice schema version 1 but this Sluice needs version 2")
        .hasMessageContaining("apply [/dev/sluice/mysql/V2__sluice.sql]");
    try (MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).build()) {
      assertThat(store.cancel("k", "late", 1, 60_000).done()).isFalse();
      assertThat(store.acquire("k", "late", 1, 5, 60_000).done()).isFalse();
      assertThat(store.acquire("k", "other", 1, 5, 60_000).done()).isTrue();
      assertThat(store.inFlight("k")).isEqualTo(1);
    }
  }

  @Test
  void shippedSchema_isTheResource_andCreateIfMissingIsIdempotent() throws Exception {
    StringBuilder shipped = new StringBuilder();
    for (String resource : MysqlStore.SCHEMA_RESOURCES) {
      try (InputStream in = MysqlStore.class.getResourceAsStream(resource)) {
        shipped.append(new String(in.readAllBytes(), StandardCharsets.UTF_8)).append('\n');
      }
    }
    assertThat(MysqlStore.SCHEMA_RESOURCES).hasSize(MysqlStore.SCHEMA_VERSION);
    assertThat(MysqlStore.schemaSql(MysqlStore.DEFAULT_TABLE)).isEqualTo(shipped.toString());
    assertThat(MysqlStore.schemaSql("limits"))
        .contains("CREATE TABLE IF NOT EXISTS limits (")
        .contains("PROCEDURE limits_decide(").doesNotContain("sluice_buckets");
    String table = freshTable();
    MysqlStore.builder(TestMysql.dataSource()).table(table).createIfMissing(true).build();
    MysqlStore.builder(TestMysql.dataSource()).table(table).createIfMissing(true).build();
    MysqlStore.builder(TestMysql.dataSource()).table(table).build();   // found, no create
    assertThat(count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA ="
        + " DATABASE() AND TABLE_NAME LIKE '" + table + "%' AND ENGINE = 'InnoDB'"))
        .as("five InnoDB tables").isEqualTo(5);
  }

  @Test
  void stateLivesInItsColumns_expiresWhenEmpty_andRejectionsAndChecksWriteNothing()
      throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestMysql.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).build();
    countWrites(table);
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1))).store(store)
        .build();
    assertThat(l.check("k").isAllowed()).isTrue();
    assertThat(row(table, "k")).as("a check writes nothing").isNull();
    assertThat(l.tryAcquire("k", 1.5).isAllowed()).isTrue();
    Object[] r = row(table, "k");
    assertThat(r[0]).isEqualTo("b");
    assertThat(r[1]).isEqualTo(Long.toString(T0 + 1_500_000));
    assertThat(r[2]).as("expires when empty, 1.5 s from now").isEqualTo(T0 + 1_500_000);
    long writes = count("SELECT n FROM " + table + "_writes");
    assertThat(writes).isEqualTo(1);
    Decision rejected = l.tryAcquire("k", 1);
    assertThat(rejected.isAllowed()).isFalse();
    l.check("k");
    assertThat(count("SELECT n FROM " + table + "_writes")).as("a rejection and a check write"
        + " nothing").isEqualTo(writes);
    assertThat(row(table, "k")[1]).isEqualTo(Long.toString(T0 + 1_500_000));
    l.reset("k");
    assertThat(row(table, "k")).isNull();
  }

  @Test
  void severalLimits_shareOneRow() throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestMysql.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).prefix("api:").build();
    RateLimiter l = Sluice.builder().limits(Limit.leakyBucket(5, Rate.perSecond(5)),
        Limit.slidingWindow(3, Duration.ofSeconds(10))).store(store).build();
    for (int i = 0; i < 3; i++) {
      assertThat(l.tryAcquire("u").isAllowed()).isTrue();
    }
    assertThat(l.tryAcquire("u").isAllowed()).isFalse();
    Object[] r = row(table, "api:u");
    assertThat(r[0]).isEqualTo("bs");
    assertThat((String) r[1]).startsWith((T0 + 600_000) + ",");
  }

  @Test
  void aKeyStoredUnderOtherLimits_restartsFromEmpty() throws Exception {
    String table = freshTable();
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestMysql.SEMANTICS_TIMEOUT)
        .timeSourceMicros(now::get).build();
    RateLimiter two = Sluice.builder().limits(Limit.leakyBucket(1, Rate.perSecond(1)),
        Limit.fixedWindow(5, Duration.ofMinutes(1))).store(store).build();
    RateLimiter one = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1)))
        .store(store).build();
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
  void keysUpToTheLimit_areStored_andKeysAreComparedByteForByte() throws Exception {
    String table = freshTable();
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(TestMysql.SEMANTICS_TIMEOUT)
        .prefix("some-application:").build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perMinute(1))).store(store)
        .build();
    String longest = "\ud83d\ude00".repeat(256);            // 1,024 bytes of UTF-8, all indexed
    assertThat(l.tryAcquire(longest).isAllowed()).isTrue();
    assertThat(l.tryAcquire(longest).isAllowed()).isFalse();
    assertThat(row(table, "some-application:" + longest)).isNotNull();
    // no collation folds keys together: case, accents and trailing spaces all count
    for (String k : new String[] {"alice", "Alice", "ALICE", "alicé", "alice "}) {
      assertThat(l.tryAcquire(k).isAllowed()).as(k).isTrue();
    }
    for (String bad : new String[] {"a\u0000b", "\udc00", longest + "x"}) {
      assertThatThrownBy(() -> l.tryAcquire(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(l.stats().storeErrors()).isZero();
  }

  @Test
  void connectionsWithoutAutoCommit_stillCommitEachDecision() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestMysql.url());
    config.setAutoCommit(false);
    config.setMaximumPoolSize(2);
    try (HikariDataSource manual = new HikariDataSource(config)) {
      String table = freshTable();
      MysqlStore store = MysqlStore.builder(manual).table(table).createIfMissing(true).build();
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).store(store)
          .build();
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
      assertThat(row(table, "k")).as("visible to another connection").isNotNull();
      assertThat(l.tryAcquire("k").isAllowed()).isFalse();
      RateLimiter g = Sluice.builder().group(Group.sharing(Limit.leakyBucket(2, Rate.perHour(1)))
          .assured(Limit.leakyBucket(1, Rate.perHour(1)))).store(store).build();
      assertThat(g.tryAcquire("k").isAllowed()).isTrue();
      assertThat(count("SELECT COUNT(*) FROM " + table + "_groups")).as("the key and the parent,"
          + " committed").isEqualTo(2);
      assertThat(l.stats().storeErrors()).isZero();
    }
  }

  @Test
  void aKeyHeldPastTheTimeout_failsThisDecisionWithinTheTimeout_andChargesNothing()
      throws Exception {
    String table = freshTable();
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(Duration.ofMillis(100)).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    try (Connection holder = TestMysql.dataSource().getConnection()) {
      holdKey(holder, table, "k");
      long start = System.nanoTime();
      Decision d = l.tryAcquire("k");
      long took = System.nanoTime() - start;
      assertThat(d.isDegraded()).isTrue();
      assertThat(d.isAllowed()).as("fail open").isTrue();
      assertThat(took).as("bounded by the timeout, not by the lock holder")
          .isLessThan(TimeUnit.SECONDS.toNanos(2));
      assertThat(l.tryAcquire("other").isDegraded()).as("other keys are not held").isFalse();
      awaitStatementsPastTheirTime(holder, table, 100);
      releaseKey(holder);
    }
    assertThat(l.stats().storeErrors()).isEqualTo(1);
    Decision after = l.check("k", 9);
    assertThat(after.isAllowed()).as("one charge, not two").isTrue();
    assertThat(l.check("k", 9.01).isAllowed()).isFalse();
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
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(Duration.ofMillis(100)).build();
    assertThat(store.combinesDecisions()).as("on by default").isTrue();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_OPEN).build();
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    try (Connection holder = TestMysql.dataSource().getConnection()) {
      holdKey(holder, table, "k");
      CombinedCallsCheck.callersBehindAHeldKey(l, "k", () -> {
        CombinedCallsCheck.awaitNoSessionWaiting(holder, "SELECT COUNT(*) FROM"
            + " information_schema.PROCESSLIST WHERE STATE LIKE '%user lock%' OR INFO LIKE 'CALL %'");
        // the first call's one statement may still wait for the row: late, it charges nothing
        awaitStatementsPastTheirTime(holder, table, 100);
        releaseKey(holder);
      });
    }
  }

  @Test
  void permitIds_longerThanTheColumn_areRefusedNamingTheLimit() {
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(freshTable())
        .createIfMissing(true).build();
    assertThatThrownBy(() -> store.acquire("k", "i".repeat(256), 1, 10, 1000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 255 bytes of UTF-8 on MySQL but was 256 bytes");
    assertThat(store.acquire("k", "i".repeat(255), 1, 10, 1000).done()).isTrue();
  }

  /**
   * Waits until every one statement on {@code table} still waiting in the server has waited
   * there longer than its allowance ({@code timeoutMillis}, with 100 ms to spare): the caller's
   * time left counts from the statement's start on the server, which on a busy host can come
   * well after the caller sent it (and after the caller gave up), so releasing the row on the
   * caller's clock alone could let a statement the server began late charge in its time.
   * MariaDB reports a statement's time in milliseconds ({@code TIME_MS}), MySQL in seconds.
   */
  static void awaitStatementsPastTheirTime(Connection holder, String table, long timeoutMillis)
      throws SQLException {
    boolean mariadb = holder.getMetaData().getDatabaseProductVersion().contains("MariaDB");
    String young = mariadb ? "TIME_MS < " + (timeoutMillis + 100)
        : "TIME < " + Math.max(1, (timeoutMillis + 100 + 999) / 1000);
    CombinedCallsCheck.awaitNoSessionWaiting(holder, "SELECT COUNT(*) FROM"
        + " information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE"
        + " '%INSERT INTO " + table + " %' AND " + young);
  }

  /**
   * Takes the key's named lock on {@code holder}, as the procedures hold it, and its row, as the
   * one statement of a single bucket's tryAcquire waits for it; {@link #releaseKey} lets go.
   */
  private static void holdKey(Connection holder, String table, String key) throws SQLException {
    holder.setAutoCommit(false);
    try (PreparedStatement p = holder.prepareStatement(
        "SELECT k FROM " + table + " WHERE k = ? FOR UPDATE")) {
      p.setString(1, key);
      try (ResultSet rs = p.executeQuery()) {
        assertThat(rs.next()).as("the key's row").isTrue();
      }
    }
    try (PreparedStatement p = holder.prepareStatement(
        "SELECT GET_LOCK(CONCAT('sluice:', MD5(CONCAT(?, ' ', ?))), 5)")) {
      p.setString(1, table);
      p.setString(2, key);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        assertThat(rs.getInt(1)).as("the key's lock, as a decision holds it").isEqualTo(1);
      }
    }
  }

  private static void releaseKey(Connection holder) throws SQLException {
    holder.rollback();
    try (Statement s = holder.createStatement()) {
      s.execute("DO RELEASE_ALL_LOCKS()");
    }
    holder.setAutoCommit(true);
  }
}

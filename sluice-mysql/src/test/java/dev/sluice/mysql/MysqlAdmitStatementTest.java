package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreProtocol.Kind;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.testkit.CombinedCallsCheck;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.Test;

/**
 * The one statement that decides a single bucket's tryAcquire ({@link AdmitStatement}) beside
 * the procedure, which decides everything else on the same rows.
 */
class MysqlAdmitStatementTest {
  private static final long T0 = 1_700_000_000_000_000L;

  private static String freshTable() {
    return "a_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  /**
   * The session's counts: [0] {@code CALL}s of procedures, [1] statements the server ran for the
   * client ({@code Questions}: one per round trip), this reading included.
   */
  private static long[] counts(Connection c) throws SQLException {
    long[] counts = new long[2];
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW SESSION STATUS"
        + " WHERE Variable_name IN ('Com_call_procedure', 'Questions')")) {
      while (rs.next()) {
        counts[rs.getString(1).equalsIgnoreCase("Questions") ? 1 : 0] = rs.getLong(2);
      }
    }
    return counts;
  }

  /** {state} of a key's row, or null. */
  private static String state(String table, String key) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT state FROM " + table + " WHERE k = ?")) {
      p.setString(1, key);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  @Test
  void aSingleBucketsTryAcquire_callsNoProcedure_andEverythingElseDoes() throws Exception {
    try (HikariDataSource one = TestMysql.pool(TestMysql.url(), 1)) {
      AtomicLong now = new AtomicLong(T0);
      MysqlStore store = MysqlStore.builder(one).table(freshTable()).createIfMissing(true)
          .timeSourceMicros(now::get).build();
      RateLimiter bucket = Sluice.builder().limit(Limit.leakyBucket(3, Rate.perSecond(1)))
          .store(store).build();
      RateLimiter penalized = Sluice.builder().limit(Limit.leakyBucket(3, Rate.perSecond(1))
          .withPenalty(Duration.ofSeconds(1))).store(store).build();
      long[] before;
      try (Connection c = one.getConnection()) {
        before = counts(c);
        long[] next = counts(c);
        assertThat(next[1] - before[1]).as("a reading counts itself once").isEqualTo(1);
        before = next;
      }
      for (int i = 0; i < 3; i++) {
        assertThat(bucket.tryAcquire("k").isAllowed()).isTrue();
      }
      Decision rejected = bucket.tryAcquire("k", 0.5);
      assertThat(rejected.isAllowed()).isFalse();
      assertThat(rejected.retryAfter()).isEqualTo(Duration.ofMillis(500));
      assertThat(bucket.tryAcquire("k", 4).isAllowed()).as("above the capacity").isFalse();
      try (Connection c = one.getConnection()) {
        long[] after = counts(c);
        assertThat(after[0] - before[0]).as("only the cost above the capacity called"
            + " the procedure").isEqualTo(1);
        assertThat(after[1] - before[1] - 1).as("one statement, one round trip, per decision")
            .isEqualTo(5);
        before = after;
      }
      now.addAndGet(1_000_000);
      assertThat(bucket.check("k").remaining()).isEqualTo(1.0);
      assertThat(penalized.tryAcquire("p").isAllowed()).isTrue();
      try (Connection c = one.getConnection()) {
        long[] after = counts(c);
        assertThat(after[0] - before[0]).as("a check and a bucket with a penalty")
            .isEqualTo(2);
        assertThat(after[1] - before[1] - 1).as("one CALL, one round trip, per decision")
            .isEqualTo(2);
      }
      store.close();
    }
  }

  /**
   * A store whose driver would send the statement as text says so once, at INFO, with what has
   * it parsed once per connection; on server-side preparation it says nothing. MySQL Connector/J
   * sends any statement that begins with SET as text, and on MariaDB the statement begins with
   * {@code SET STATEMENT}: with HikariCP's settings too, it is told to use MariaDB's driver.
   */
  @Test
  void aDriverPreparingOnTheClient_isNamedOnce_andOnePreparingOnTheServerIsNot() throws Exception {
    List<LogRecord> logged = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        logged.add(r);
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger log = Logger.getLogger(MysqlStore.class.getName());
    log.addHandler(capture);
    try {
      assertThat(advice(TestMysql.url(), logged)).isNotNull()
          .contains("MariaDB Connector/J prepares statements on the client")
          .contains("store's single-bucket statement", "useServerPrepStmts=true in the URL");
      String connectorJ = DriverConformance.connectorJ();
      assertThat(advice(connectorJ, logged)).isNotNull()
          .contains("MySQL Connector/J prepares statements on the client")
          .contains("begins with SET STATEMENT", "MariaDB Connector/J with useServerPrepStmts");
      assertThat(advice(DriverConformance.withOptions(connectorJ,
          MysqlConnectorJServerPreparedTest.OPTIONS), logged)).as("HikariCP's settings")
          .contains("MySQL Connector/J prepares statements on the client");
      assertThat(advice(DriverConformance.withOptions(TestMysql.url(), "useServerPrepStmts=true"),
          logged)).as("prepared on the server").isNull();
    } finally {
      log.removeHandler(capture);
    }
  }

  /** What a store built on {@code url} said (its one record), or null if it said nothing. */
  private static String advice(String url, List<LogRecord> logged) throws Exception {
    logged.clear();
    String table = freshTable();
    try (HikariDataSource one = TestMysql.pool(url, 1);
        MysqlStore store = MysqlStore.builder(one).table(table).createIfMissing(true).build()) {
      assertThat(store.toString()).contains(table);
    }
    assertThat(logged).as(url).hasSizeLessThanOrEqualTo(1);
    if (logged.isEmpty()) {
      return null;
    }
    assertThat(logged.get(0).getLevel()).isEqualTo(Level.INFO);
    String message = new SimpleFormatter().formatMessage(logged.get(0));
    assertThat(message).contains("MysqlStore on table " + table + ":");
    return message;
  }

  @Test
  void theStatementAndTheProcedure_agreeOnEveryFigure_whicheverWroteTheRow() {
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(freshTable())
        .createIfMissing(true).timeSourceMicros(now::get).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2.5, Rate.perSecond(2)))
        .store(store).build();
    Random random = new Random(29);
    for (int step = 0; step < 300; step++) {
      now.addAndGet(random.nextInt(400_000));
      double cost = (1 + random.nextInt(12)) / 4.0;
      // a check (the procedure) and then a tryAcquire (the statement) read the same state
      Decision checked = l.check("k", cost);
      Decision decided = l.tryAcquire("k", cost);
      assertThat(decided.isAllowed()).as("step %d", step).isEqualTo(checked.isAllowed());
      assertThat(decided.retryAfter()).as("step %d", step).isEqualTo(checked.retryAfter());
      assertThat(decided.remaining()).as("step %d", step)
          .isCloseTo(checked.remaining() - (decided.isAllowed() ? cost : 0), within(1e-9));
      if (step % 7 == 3) {
        l.tryAcquire("k", 0.25 * (1 + random.nextInt(3)));   // and now and then a plain one
      }
    }
    store.close();
  }

  /**
   * The procedure finds no row and inserts one; the statement may insert it in between. Many
   * fresh keys, each raced by both at once on a frozen clock: every key ends holding exactly its
   * capacity, and the callers were told of exactly as many admissions as it holds.
   */
  @Test
  void theProcedureAndTheStatement_racingOnNewKeys_loseAndDoubleNoCharge() throws Exception {
    AtomicLong now = new AtomicLong(T0);
    String table = freshTable();
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).localQueue(false).timeSourceMicros(now::get).build();
    long capacity = 5_000_000;                 // 5 s of 1 µs ticks: five calls of 1 s each
    long cost = 1_000_000;
    Kind[] kinds = {Kind.BUCKET};
    StoreRequest admit = StoreRequest.of(Operation.TRY_ACQUIRE, kinds, new long[] {capacity},
        new long[] {0}, new long[] {0}, new long[] {cost}, new long[] {1}, "b", 1);
    StoreRequest lease = StoreRequest.of(Operation.LEASE, kinds, new long[] {capacity},
        new long[] {0}, new long[] {0}, new long[] {cost}, new long[] {1}, "b", 1);
    assertThat(AdmitStatement.handles(admit)).isTrue();
    assertThat(AdmitStatement.handles(lease)).isFalse();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      for (int round = 0; round < 40; round++) {
        String key = "race-" + round;
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Integer>> calls = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
          StoreRequest request = t % 2 == 0 ? admit : lease;
          calls.add(pool.submit(() -> {
            go.await();
            int admitted = 0;
            for (int i = 0; i < 2; i++) {
              Observation seen = store.apply(key, request);
              long e = seen.normalizedState()[0];
              long backlog = e == StoreRequest.NONE ? 0 : Math.max(0, e - seen.now());
              if (backlog + cost <= capacity) {
                admitted++;
              }
            }
            return admitted;
          }));
        }
        go.countDown();
        int told = 0;
        for (Future<Integer> f : calls) {
          told += f.get();
        }
        assertThat(told).as("round %d: admissions told", round).isEqualTo(5);
        assertThat(state(table, key)).as("round %d: the charge held", round)
            .isEqualTo(Long.toString(T0 + capacity));
      }
    } finally {
      pool.shutdownNow();
      store.close();
    }
  }

  /**
   * A caller that gave up waiting for the row is not charged when the row comes free after it
   * left: the statement runs after its time and writes nothing.
   */
  @Test
  void aStatementThatGetsTheRowAfterTheCallerLeft_chargesNothing() throws Exception {
    String table = freshTable();
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).statementTimeout(Duration.ofMillis(100)).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1))).store(store)
        .onStoreFailure(StoreFailure.FAIL_CLOSED).build();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    String held = state(table, "k");
    try (Connection holder = TestMysql.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement p = holder.prepareStatement(
          "SELECT k FROM " + table + " WHERE k = ? FOR UPDATE")) {
        p.setString(1, "k");
        p.executeQuery().close();
      }
      Decision d = l.tryAcquire("k", 2);
      assertThat(d.isAllowed()).as("fail closed").isFalse();
      assertThat(d.isDegraded()).isTrue();
      // the caller has left; the row comes free once the statement has waited in the server
      // longer than the caller's time left, counted from its start there (on a busy host that
      // can be well after the caller gave up)
      MysqlStoreTest.awaitStatementsPastTheirTime(holder, table, 100);
      holder.rollback();   // the statement, still waiting in the database, gets the row now
      CombinedCallsCheck.awaitNoSessionWaiting(holder, "SELECT COUNT(*) FROM"
          + " information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE"
          + " '%INSERT INTO " + table + " %'");
    }
    assertThat(state(table, "k")).as("nothing charged after the caller left").isEqualTo(held);
    assertThat(l.check("k", 9).isAllowed()).isTrue();
    assertThat(l.check("k", 9.01).isAllowed()).isFalse();
    store.close();
  }

  @Test
  void statementText_namesEveryParameter_andUsesTheDatabaseClockUnlessTold() {
    StringBuilder order = new StringBuilder();
    String sql = AdmitStatement.sql("t_x", true, 1, order);
    assertThat(sql).startsWith("SET STATEMENT innodb_lock_wait_timeout = 1 FOR INSERT INTO t_x ")
        .contains("UTC_TIMESTAMP(6)").doesNotContainPattern(":[a-z]")
        .doesNotContain("sluice_buckets");
    assertThat(sql.chars().filter(c -> c == '?').count()).isEqualTo(order.length());
    assertThat(order.toString()).doesNotContain("n").contains("k", "q", "c", "w");
    StringBuilder told = new StringBuilder();
    String tested = AdmitStatement.sql("t_x", false, 0, told);
    assertThat(tested).startsWith("INSERT INTO t_x ").doesNotContain("UTC_TIMESTAMP");
    assertThat(told.toString()).contains("n");
    assertThat(AdmitStatement.BIAS + StoreProtocol.SCRIPT_BIG)
        .as("what a bucket reports stays below the sentinels")
        .isLessThan(AdmitStatement.TOO_LATE).isLessThan(AdmitStatement.OTHER_LIMITS);
  }
}

package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.spi.PermitGroup;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/** Pruning deletes expired rows only, in batches, while decisions run on live keys. */
class MysqlPruneTest {
  private static final long T0 = 1_700_000_000_000_000L;

  private static long rows(String table, String prefix) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE k LIKE ?")) {
      p.setString(1, prefix + "%");
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @Test
  void pruneExpired_removesOnlyExpiredRows_underConcurrentTraffic() throws Exception {
    String table = "prune_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    AtomicLong now = new AtomicLong(T0);
    MysqlStore shortStore = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).prefix("short:").timeSourceMicros(now::get).pruneBatchSize(50).build();
    MysqlStore longStore = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .prefix("long:").timeSourceMicros(now::get).statementTimeout(Duration.ofSeconds(10)).build();
    RateLimiter shortLived = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1)))
        .store(shortStore).build();
    RateLimiter longLived = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1)))
        .store(longStore).build();
    int keys = 400;
    for (int i = 0; i < keys; i++) {
      assertThat(shortLived.tryAcquire("k" + i).isAllowed()).isTrue();
      assertThat(longLived.tryAcquire("k" + i).isAllowed()).isTrue();
    }
    assertThat(shortStore.pruneExpired()).as("nothing has expired yet").isZero();
    now.set(T0 + 10_000_000);   // 10 s later: the short rows are empty, the long ones are not

    AtomicLongArray admitted = new AtomicLongArray(keys);
    for (int i = 0; i < keys; i++) {
      admitted.set(i, 1);
    }
    AtomicBoolean stop = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Future<?>> load = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int id = t;
      load.add(pool.submit(() -> {
        int i = id;
        while (!stop.get()) {
          int k = (i += 13) % keys;
          if (longLived.tryAcquire("k" + k).isAllowed()) {
            admitted.incrementAndGet(k);
          }
        }
      }));
    }
    long deleted;
    try {
      deleted = shortStore.pruneExpired();
    } finally {
      stop.set(true);
      for (Future<?> f : load) {
        f.get(60, TimeUnit.SECONDS);
      }
      pool.shutdownNow();
    }
    assertThat(deleted).isEqualTo(keys);
    assertThat(shortStore.prunedRows()).isEqualTo(keys);
    assertThat(rows(table, "short:")).isZero();
    assertThat(rows(table, "long:")).as("live rows stay").isEqualTo(keys);
    for (int i = 0; i < keys; i++) {
      long a = admitted.get(i);
      assertThat(a).isLessThanOrEqualTo(10);
      assertThat(longLived.check("k" + i).remaining()).as("key " + i + " kept its level")
          .isCloseTo(10.0 - a + 10.0 / 3600, org.assertj.core.data.Offset.offset(1e-6));   // 10 s leaked at 1/h
    }
    assertThat(longLived.stats().storeErrors()).isZero();
  }

  @Test
  void scheduledPruning_runsOnItsOwn() throws Exception {
    String table = "prune_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    AtomicLong now = new AtomicLong(T0);
    try (MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).timeSourceMicros(now::get).pruneEvery(Duration.ofMillis(20)).build()) {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1))).store(store).build();
      for (int i = 0; i < 30; i++) {
        l.tryAcquire("k" + i);
      }
      now.set(T0 + 5_000_000);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while ((rows(table, "k") > 0 || store.prunedRows() < 30) && System.nanoTime() < deadline) {
        Thread.sleep(20);   // waiting for the background thread (it counts after its last table)
      }
      assertThat(rows(table, "k")).isZero();
      assertThat(store.prunedRows()).isEqualTo(30);
    }
  }

  @Test
  void pruneExpired_removesAGroupsExpiredRows_andKeepsLiveOnes() throws Exception {
    String table = "prune_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).timeSourceMicros(now::get).pruneBatchSize(7).build();
    RateLimiter quick = Sluice.builder().group(dev.sluice.Group.sharing(
            Limit.leakyBucket(100, Rate.perSecond(100))).assured(Limit.leakyBucket(1, Rate.perSecond(1)))
            .by(key -> key.substring(0, 2)))
        .store(store).build();
    RateLimiter slow = Sluice.builder().group(dev.sluice.Group.sharing(
            Limit.leakyBucket(100, Rate.perHour(100))).assured(Limit.leakyBucket(1, Rate.perHour(1)))
            .by(key -> key.substring(0, 2)))
        .store(store).build();
    for (int i = 0; i < 20; i++) {
      assertThat(quick.tryAcquire("q" + (i % 4) + "/" + i).isAllowed()).isTrue();
      assertThat(slow.tryAcquire("s" + (i % 4) + "/" + i).isAllowed()).isTrue();
    }
    long before = groupRows(table, "q");
    assertThat(before).as("20 keys and 4 parents").isEqualTo(24);
    now.set(T0 + 10_000_000);   // the quick group's rows are empty, the slow one's are not
    assertThat(store.pruneExpired()).isEqualTo(24);
    assertThat(groupRows(table, "q")).isZero();
    assertThat(groupRows(table, "s")).as("live rows stay").isEqualTo(24);
    dev.sluice.Decision d = slow.tryAcquire("s0/0");
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.isBorrowed()).as("s0/0 kept its assured level: above it, it borrows").isTrue();
  }

  /** Ended leases, plain and grouped, are pruned; live ones stay and still count. */
  @Test
  void pruneExpired_removesEndedPermits_plainAndGrouped() throws Exception {
    String table = "prune_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    AtomicLong now = new AtomicLong(T0);
    MysqlStore store = MysqlStore.builder(TestMysql.dataSource()).table(table)
        .createIfMissing(true).timeSourceMicros(now::get).pruneBatchSize(3).build();
    PermitGroup terms = new PermitGroup("g", 100, 100, 0);
    for (int i = 0; i < 5; i++) {
      assertThat(store.acquire("k" + i, "short" + i, 1, 10, 1_000).done()).isTrue();
      assertThat(store.acquire(terms, "k" + i, "short" + i, 1, 10, 1_000).done()).isTrue();
      assertThat(store.acquire(terms, "k" + i, "long" + i, 1, 10, 60_000).done()).isTrue();
    }
    now.set(T0 + 2_000_000);   // the short leases have ended
    assertThat(store.pruneExpired()).isEqualTo(10);
    assertThat(count("SELECT count(*) FROM " + table + "_permits")).isZero();
    assertThat(count("SELECT count(*) FROM " + table + "_group_permits")).isEqualTo(5);
    assertThat(store.inFlight("g", null)).isEqualTo(5);
    assertThat(store.inFlight("g", "k0")).isEqualTo(1);
  }

  private static long count(String sql) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql);
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long groupRows(String table, String prefix) throws SQLException {
    try (Connection c = TestMysql.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(
            "SELECT count(*) FROM " + table + "_groups WHERE grp LIKE ?")) {
      p.setString(1, prefix + "%");
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitStore;
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
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * Pruning, as every store on a SQL database runs it: expired rows are deleted in batches (a
 * plain key's, a group's, an ended permit's), live ones stay and keep their state, also while
 * decisions run on them, and scheduled pruning runs on its own. Each test uses a table of its
 * own and a test clock. A store module extends this class.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 *
 * @param <S> the store
 */
public abstract class PruningSuite<S extends DecisionStore> {
  private static final long T0 = 1_700_000_000_000_000L;

  /** For a store's test class, which extends this one. */
  protected PruningSuite() {}

  /**
   * What a store under test is built with.
   *
   * @param table the table, created when {@code create} is set
   * @param create whether to create the table (the builder's {@code createIfMissing})
   * @param prefix the prefix of every key ("" for none)
   * @param micros the test clock, microseconds since the epoch
   * @param pruneBatch rows deleted per pruning statement, 0 for the store's default
   * @param timeout the per-decision timeout, null for the store's default
   * @param pruneEvery how often it prunes on its own, null for never
   */
  protected record Settings(String table, boolean create, String prefix, LongSupplier micros,
      int pruneBatch, Duration timeout, Duration pruneEvery) {}

  /** A store on the database of {@link #dataSource()}, as {@code settings} say. */
  protected abstract S open(Settings settings);

  /** The store's {@code pruneExpired()}: deletes expired rows, answers how many. */
  protected abstract long pruneExpired(S store);

  /** The store's {@code prunedRows()}: rows pruned so far, by calls and on schedule. */
  protected abstract long prunedRows(S store);

  /** The store's permits: the store itself. */
  protected abstract PermitStore permits(S store);

  /** The database the stores use. */
  protected abstract DataSource dataSource();

  /** The name of the key column of a store's table of buckets. */
  protected abstract String keyColumn();

  @Test
  public void pruneExpired_removesOnlyExpiredRows_underConcurrentTraffic() throws Exception {
    String table = table();
    AtomicLong now = new AtomicLong(T0);
    S shortStore = open(new Settings(table, true, "short:", now::get, 50, null, null));
    S longStore = open(new Settings(table, false, "long:", now::get, 0, Duration.ofSeconds(10),
        null));
    RateLimiter shortLived = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1)))
        .store(shortStore).build();
    RateLimiter longLived = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1)))
        .store(longStore).build();
    int keys = 400;
    for (int i = 0; i < keys; i++) {
      assertThat(shortLived.tryAcquire("k" + i).isAllowed()).isTrue();
      assertThat(longLived.tryAcquire("k" + i).isAllowed()).isTrue();
    }
    assertThat(pruneExpired(shortStore)).as("nothing has expired yet").isZero();
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
      deleted = pruneExpired(shortStore);
    } finally {
      stop.set(true);
      for (Future<?> f : load) {
        f.get(60, TimeUnit.SECONDS);
      }
      pool.shutdownNow();
    }
    assertThat(deleted).isEqualTo(keys);
    assertThat(prunedRows(shortStore)).isEqualTo(keys);
    assertThat(rows(table, "short:")).isZero();
    assertThat(rows(table, "long:")).as("live rows stay").isEqualTo(keys);
    for (int i = 0; i < keys; i++) {
      long a = admitted.get(i);
      assertThat(a).isLessThanOrEqualTo(10);
      assertThat(longLived.check("k" + i).remaining()).as("key " + i + " kept its level")
          .isCloseTo(10.0 - a + 10.0 / 3600, Offset.offset(1e-6));   // 10 s leaked at 1/h
    }
    assertThat(longLived.stats().storeErrors()).isZero();
  }

  @Test
  public void scheduledPruning_runsOnItsOwn() throws Exception {
    String table = table();
    AtomicLong now = new AtomicLong(T0);
    S store = open(new Settings(table, true, "", now::get, 0, null, Duration.ofMillis(20)));
    try {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1))).store(store)
          .build();
      for (int i = 0; i < 30; i++) {
        l.tryAcquire("k" + i);
      }
      now.set(T0 + 5_000_000);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while ((rows(table, "k") > 0 || prunedRows(store) < 30) && System.nanoTime() < deadline) {
        Thread.sleep(20);   // waiting for the background thread (it counts after its last table)
      }
      assertThat(rows(table, "k")).isZero();
      assertThat(prunedRows(store)).isEqualTo(30);
    } finally {
      store.close();
    }
  }

  @Test
  public void pruneExpired_removesAGroupsExpiredRows_andKeepsLiveOnes() throws Exception {
    String table = table();
    AtomicLong now = new AtomicLong(T0);
    S store = open(new Settings(table, true, "", now::get, 7, null, null));
    RateLimiter quick = Sluice.builder().group(Group.sharing(
            Limit.leakyBucket(100, Rate.perSecond(100)))
            .assured(Limit.leakyBucket(1, Rate.perSecond(1)))
            .by(key -> key.substring(0, 2)))
        .store(store).build();
    RateLimiter slow = Sluice.builder().group(Group.sharing(
            Limit.leakyBucket(100, Rate.perHour(100)))
            .assured(Limit.leakyBucket(1, Rate.perHour(1)))
            .by(key -> key.substring(0, 2)))
        .store(store).build();
    for (int i = 0; i < 20; i++) {
      assertThat(quick.tryAcquire("q" + (i % 4) + "/" + i).isAllowed()).isTrue();
      assertThat(slow.tryAcquire("s" + (i % 4) + "/" + i).isAllowed()).isTrue();
    }
    long before = groupRows(table, "q");
    assertThat(before).as("20 keys and 4 parents").isEqualTo(24);
    now.set(T0 + 10_000_000);   // the quick group's rows are empty, the slow one's are not
    assertThat(pruneExpired(store)).isEqualTo(24);
    assertThat(groupRows(table, "q")).isZero();
    assertThat(groupRows(table, "s")).as("live rows stay").isEqualTo(24);
    Decision d = slow.tryAcquire("s0/0");
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.isBorrowed()).as("s0/0 kept its assured level: above it, it borrows").isTrue();
  }

  /** Ended leases, plain and grouped, are pruned; live ones stay and still count. */
  @Test
  public void pruneExpired_removesEndedPermits_plainAndGrouped() throws Exception {
    String table = table();
    AtomicLong now = new AtomicLong(T0);
    S store = open(new Settings(table, true, "", now::get, 3, null, null));
    PermitStore permits = permits(store);
    PermitGroup terms = new PermitGroup("g", 100, 100, 0);
    for (int i = 0; i < 5; i++) {
      assertThat(permits.acquire("k" + i, "short" + i, 1, 10, 1_000).done()).isTrue();
      assertThat(permits.acquire(terms, "k" + i, "short" + i, 1, 10, 1_000).done()).isTrue();
      assertThat(permits.acquire(terms, "k" + i, "long" + i, 1, 10, 60_000).done()).isTrue();
    }
    now.set(T0 + 2_000_000);   // the short leases have ended
    assertThat(pruneExpired(store)).isEqualTo(10);
    assertThat(count("SELECT count(*) FROM " + table + "_permits")).isZero();
    assertThat(count("SELECT count(*) FROM " + table + "_group_permits")).isEqualTo(5);
    assertThat(permits.inFlight("g", null)).isEqualTo(5);
    assertThat(permits.inFlight("g", "k0")).isEqualTo(1);
  }

  private static String table() {
    return "prune_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  private long rows(String table, String prefix) throws SQLException {
    return count("SELECT count(*) FROM " + table + " WHERE " + keyColumn() + " LIKE ?", prefix);
  }

  private long groupRows(String table, String prefix) throws SQLException {
    return count("SELECT count(*) FROM " + table + "_groups WHERE grp LIKE ?", prefix);
  }

  private long count(String sql) throws SQLException {
    return count(sql, null);
  }

  private long count(String sql, String prefix) throws SQLException {
    try (Connection c = dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql)) {
      if (prefix != null) {
        p.setString(1, prefix + "%");
      }
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}

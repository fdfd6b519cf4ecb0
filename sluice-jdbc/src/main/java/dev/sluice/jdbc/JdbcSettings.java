package dev.sluice.jdbc;

import java.time.Duration;
import java.util.Objects;

/** The checks of the settings both JDBC stores' builders take, with the same messages. */
public final class JdbcSettings {
  private JdbcSettings() {}

  /** A decision's whole budget: 1 ms to 1 hour. */
  public static Duration statementTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero() || timeout.toMillis() < 1
        || timeout.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("statementTimeout must be between 1 ms and 1 hour but was "
          + timeout);
    }
    return timeout;
  }

  /** How often to prune: at least 1 ms. */
  public static Duration pruneEvery(Duration every) {
    Objects.requireNonNull(every, "every");
    if (every.toMillis() < 1) {
      throw new IllegalArgumentException("pruneEvery must be at least 1 ms but was " + every);
    }
    return every;
  }

  /** Threads for asynchronous calls: 1 to 256. */
  public static int asyncThreads(int threads) {
    if (threads < 1 || threads > 256) {
      throw new IllegalArgumentException("asyncThreads must be between 1 and 256 but was " + threads);
    }
    return threads;
  }

  /** Rows per pruning statement: 1 to 1,000,000. */
  public static int pruneBatchSize(int rows) {
    if (rows < 1 || rows > 1_000_000) {
      throw new IllegalArgumentException("pruneBatchSize must be between 1 and 1000000 but was "
          + rows);
    }
    return rows;
  }
}

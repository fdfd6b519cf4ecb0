package dev.sluice.mysql;

import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ManualClock;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Limiters on the test MySQL with time passed in from the manual clock (the test hook),
 * made monotonic as the in-memory store's clock is. Each limiter gets its own key prefix, so keys
 * start empty.
 */
final class MysqlFactory implements LimiterFactory {
  private final javax.sql.DataSource dataSource;

  /** Limiters on the shared test pool (MariaDB Connector/J). */
  MysqlFactory() {
    this(TestMysql.dataSource());
  }

  /** Limiters on {@code dataSource}. */
  MysqlFactory(javax.sql.DataSource dataSource) {
    this.dataSource = dataSource;
  }

  static MysqlStore store(String prefix, ManualClock clock) {
    return store(TestMysql.dataSource(), prefix, clock);
  }

  static MysqlStore store(javax.sql.DataSource dataSource, String prefix, ManualClock clock) {
    AtomicLong last = new AtomicLong(Long.MIN_VALUE);
    return MysqlStore.builder(dataSource).createIfMissing(true).prefix(prefix)
        .statementTimeout(TestMysql.SEMANTICS_TIMEOUT).timeSourceMicros(() -> last.accumulateAndGet(Math.floorDiv(clock.nanoTime(), 1000), Math::max))
        .build();
  }

  @Override
  public RateLimiter create(ManualClock clock, List<Limit> limits) {
    MysqlStore store = store(dataSource, "test:" + UUID.randomUUID() + ":", clock);
    return Sluice.builder().limits(limits.toArray(new Limit[0])).store(store).clock(clock)
        .scheduler(clock).build();
  }

  @Override
  public RateLimiter createGroup(ManualClock clock, dev.sluice.Group group) {
    MysqlStore store = store(dataSource, "test:" + UUID.randomUUID() + ":", clock);
    return Sluice.builder().group(group).store(store).clock(clock).scheduler(clock).build();
  }

  @Override
  public long ticksPerSecond() {
    return 1_000_000L;
  }
}

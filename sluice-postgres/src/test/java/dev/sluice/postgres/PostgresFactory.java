package dev.sluice.postgres;

import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ManualClock;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Limiters on the test PostgreSQL with time passed in from the manual clock (the test hook),
 * made monotonic as the in-memory store's clock is. Each limiter gets its own key prefix, so keys
 * start empty.
 */
final class PostgresFactory implements LimiterFactory {
  static PostgresStore store(String prefix, ManualClock clock) {
    AtomicLong last = new AtomicLong(Long.MIN_VALUE);
    return PostgresStore.builder(TestPostgres.dataSource()).createIfMissing(true).prefix(prefix)
        .statementTimeout(TestPostgres.SEMANTICS_TIMEOUT).timeSourceMicros(() -> last.accumulateAndGet(Math.floorDiv(clock.nanoTime(), 1000), Math::max))
        .build();
  }

  @Override
  public RateLimiter create(ManualClock clock, List<Limit> limits) {
    PostgresStore store = store("test:" + UUID.randomUUID() + ":", clock);
    return Sluice.builder().limits(limits.toArray(new Limit[0])).store(store).clock(clock)
        .scheduler(clock).build();
  }

  @Override
  public RateLimiter createGroup(ManualClock clock, dev.sluice.Group group) {
    PostgresStore store = store("test:" + UUID.randomUUID() + ":", clock);
    return Sluice.builder().group(group).store(store).clock(clock).scheduler(clock).build();
  }

  @Override
  public long ticksPerSecond() {
    return 1_000_000L;
  }
}

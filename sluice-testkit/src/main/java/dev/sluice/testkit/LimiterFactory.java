package dev.sluice.testkit;

import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import java.util.List;

/**
 * How a store under test makes a limiter; the only thing a store module supplies.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public interface LimiterFactory {
  /**
   * A limiter over these limits whose time is {@code clock} (a store with its own clock takes the
   * time from this clock through its test hook), and that schedules on {@code clock}. Each call
   * must return a limiter whose keys start empty.
   */
  RateLimiter create(ManualClock clock, List<Limit> limits);

  /**
   * A limiter of a {@link dev.sluice.Group} on the same store, on {@code clock} as
   * {@link #create} is; its keys and groups start empty. The default says the store has none.
   */
  default RateLimiter createGroup(ManualClock clock, Group group) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " makes no groups");
  }

  /** Ticks per second of the store's clock: 1e9 in-process, 1e6 for Redis and PostgreSQL. */
  default long ticksPerSecond() {
    return 1_000_000_000L;
  }
}

package dev.sluice.testkit;

import dev.sluice.spi.PermitStore;

/**
 * How a store under test makes a {@link PermitStore}; what a store module supplies.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public interface PermitStoreFactory {
  /**
   * A store whose keys start empty and whose time is {@code clock} (a store with its own clock
   * takes the time from this clock through its test hook, in whole milliseconds); or null to test
   * the in-memory limiter, which needs no store.
   */
  PermitStore create(ManualClock clock);
}

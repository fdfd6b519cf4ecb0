package dev.sluice;

/**
 * What a limiter backed by a shared store answers when the store fails (an error, a timeout, or
 * the circuit breaker open after repeated failures). Every such decision is
 * {@link Decision#isDegraded() degraded} and counted in {@link LimiterStats}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#any-shared-store">docs/operations.md, "Any shared store"</a>.
 */
public enum StoreFailure {
  /** Reject: nothing passes while the store is down. The default. */
  FAIL_CLOSED,
  /** Admit: everything passes while the store is down. */
  FAIL_OPEN,
  /** Decide with an in-process limiter of the same limits, per JVM, until the store is back. */
  FALLBACK_IN_MEMORY,
  /**
   * Fleet mode only ({@link Sluice.Builder#leases}): once the leases held are spent, decide with
   * an in-process limiter of this instance's share of each limit (rate/N, capacity/N, with N the
   * {@link LeaseSettings#instances() instances}), so that the fleet together admits about the
   * limit while the store is down.
   */
  LOCAL_SHARE
}

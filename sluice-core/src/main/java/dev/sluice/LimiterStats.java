package dev.sluice;

/**
 * Counters of a limiter since it was built.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#any-shared-store">docs/operations.md, "Any shared store"</a>.
 *
 * @param storeErrors operations the shared store failed (errors and timeouts)
 * @param degradedDecisions decisions answered by the failure policy instead of the store
 * @param breakerOpen whether the circuit breaker currently keeps calls away from the store
 * @param evictedIdle in-memory keys evicted because they were idle
 * @param evictedBusy in-memory keys evicted while not empty (past the key bound)
 * @param deniedLocally rejections answered by the local deny cache without asking the store
 * @param keysHeld keys an in-memory limiter (or a store-backed limiter's in-memory fallback)
 *     holds now, never more than its {@code maximumKeys}; 0 for keys kept in a shared store
 * @param leases what fleet mode did with leases ({@link LeaseStats#NONE} without it)
 */
public record LimiterStats(long storeErrors, long degradedDecisions, boolean breakerOpen,
    long evictedIdle, long evictedBusy, long deniedLocally, long keysHeld, LeaseStats leases) {

  /** Counters without fleet mode. */
  public LimiterStats(long storeErrors, long degradedDecisions, boolean breakerOpen,
      long evictedIdle, long evictedBusy, long deniedLocally, long keysHeld) {
    this(storeErrors, degradedDecisions, breakerOpen, evictedIdle, evictedBusy, deniedLocally,
        keysHeld, LeaseStats.NONE);
  }
}

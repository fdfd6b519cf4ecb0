package dev.sluice.quota;

import java.util.List;

/**
 * Where quotas live: the store the counters live in (Redis, PostgreSQL, MySQL), or memory for
 * one instance ({@link InMemoryQuotaStore}). Each change is one atomic step that raises the
 * store's version and appends to its audit trail; readers poll the version, and read the quotas
 * again when it moved.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 */
public interface QuotaStore {
  /**
   * The quotas, with the version they are of.
   *
   * @param version the store's version: it rises with every change
   * @param quotas every quota, expired ones included (readers skip them)
   */
  record Snapshot(long version, List<Quota> quotas) {
    /** Checks the fields. */
    public Snapshot {
      quotas = List.copyOf(quotas);
    }
  }

  /** The store's version: it rises with every change. */
  long version();

  /** Every quota, with the version it is of. */
  Snapshot read();

  /**
   * Sets {@code quota} (replacing the one of the same policy and key or prefix), recording who
   * and why.
   *
   * @return the version after the change
   * @throws IllegalStateException if the store holds its most quotas already
   */
  long put(Quota quota, String who);

  /**
   * Removes the quota of {@code key} (a prefix when {@code prefix}) of {@code policy}.
   *
   * @return the version after the change, or the version as it was if there was no such quota
   */
  long remove(String policy, String key, boolean prefix, String who, String reason);

  /** The newest {@code n} changes, newest first. */
  List<QuotaChange> audit(int n);
}

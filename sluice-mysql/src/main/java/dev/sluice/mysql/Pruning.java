package dev.sluice.mysql;

import java.util.List;

/**
 * What pruning deletes (run by {@code dev.sluice.jdbc.BatchPruning}): rows whose
 * {@code expires_at} has passed (buckets, groups, instances) and permits whose lease ended; each
 * batch a short {@code DELETE ... LIMIT} at READ COMMITTED, so that it locks only the rows it
 * deletes and no gap a new key's first decision inserts into. Decisions never depend on it: an
 * expired row reads as an empty bucket, and a decision writes its row whether or not pruning
 * deleted it meanwhile.
 */
final class Pruning {
  /** MySQL's batches run at READ COMMITTED. */
  static final boolean READ_COMMITTED = true;

  private Pruning() {}

  /** The statements; each takes the time in microseconds (NULL: the clock) and the batch size. */
  static List<String> statements(String table) {
    String now = "COALESCE(?, sluice_my1_now())";
    String nowMillis = "FLOOR(COALESCE(?, sluice_my1_now()) / 1000)";
    return List.of(
        "DELETE FROM " + table + " WHERE expires_at < " + now + " LIMIT ?",
        "DELETE FROM " + table + "_groups WHERE expires_at < " + now + " LIMIT ?",
        "DELETE FROM " + table + "_instances WHERE expires_at <= " + now + " LIMIT ?",
        "DELETE FROM " + table + "_permits WHERE expires_at <= " + nowMillis + " LIMIT ?",
        "DELETE FROM " + table + "_group_permits WHERE expires_at <= " + nowMillis + " LIMIT ?");
  }
}

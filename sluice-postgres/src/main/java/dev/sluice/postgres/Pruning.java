package dev.sluice.postgres;

import java.util.List;

/**
 * What pruning deletes (run by {@code dev.sluice.jdbc.BatchPruning}): rows whose
 * {@code expires_at} has passed, in the table and in its groups' table, and permits whose lease
 * ended in its permits' and group permits' tables; each batch a short statement that locks its
 * victims with {@code SKIP LOCKED}, so that it never waits for a decision. Decisions never
 * depend on it: an expired row reads as an empty bucket.
 */
final class Pruning {
  /** PostgreSQL's batches skip locked rows at any isolation level. */
  static final boolean READ_COMMITTED = false;

  private Pruning() {}

  /** The statements; each takes the time in microseconds (NULL: the clock) and the batch size. */
  static List<String> statements(String table) {
    String now = "COALESCE(to_timestamp(?::float8 / 1000000), clock_timestamp())";
    String nowMillis = "floor(COALESCE(?::numeric,"
        + " (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint";
    return List.of(
        "WITH victims AS (SELECT key FROM " + table + " WHERE expires_at < " + now
            + " LIMIT ? FOR UPDATE SKIP LOCKED)"
            + " DELETE FROM " + table + " t USING victims WHERE t.key = victims.key",
        "WITH victims AS (SELECT grp, key FROM " + table + "_groups WHERE expires_at < " + now
            + " LIMIT ? FOR UPDATE SKIP LOCKED)"
            + " DELETE FROM " + table + "_groups t USING victims"
            + " WHERE t.grp = victims.grp AND t.key = victims.key",
        "WITH victims AS (SELECT key, id FROM " + table + "_permits WHERE expires_at <= "
            + nowMillis + " LIMIT ? FOR UPDATE SKIP LOCKED)"
            + " DELETE FROM " + table + "_permits t USING victims"
            + " WHERE t.key = victims.key AND t.id = victims.id",
        "WITH victims AS (SELECT grp, key, id FROM " + table + "_group_permits WHERE expires_at"
            + " <= " + nowMillis + " LIMIT ? FOR UPDATE SKIP LOCKED)"
            + " DELETE FROM " + table + "_group_permits t USING victims"
            + " WHERE t.grp = victims.grp AND t.key = victims.key AND t.id = victims.id");
  }
}

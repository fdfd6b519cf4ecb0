/**
 * What Sluice's SQL stores (PostgreSQL, MySQL / MariaDB) share: {@code dev.sluice.jdbc.store}'s
 * {@code JdbcStore}, the API both stores extend; and, not API, the plumbing under it (connections
 * by a decision's deadline, recovery connections while a pool is stalled after an outage, the
 * threads asynchronous calls run on, batch pruning), exported only to those stores.
 */
// the modules of the qualified export are built after this one
@SuppressWarnings("module")
module dev.sluice.jdbc {
  requires transitive dev.sluice;
  requires transitive java.sql;

  exports dev.sluice.jdbc.store;
  exports dev.sluice.jdbc to dev.sluice.postgres, dev.sluice.mysql;
}

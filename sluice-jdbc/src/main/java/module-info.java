/**
 * Plumbing shared by Sluice's JDBC stores (PostgreSQL, MySQL / MariaDB): connections by a
 * decision's deadline, recovery connections while a pool is stalled after an outage, and the
 * threads asynchronous calls run on. Not API: exported only to those stores.
 */
// the modules of the qualified export are built after this one
@SuppressWarnings("module")
module dev.sluice.jdbc {
  requires transitive dev.sluice;
  requires transitive java.sql;

  exports dev.sluice.jdbc to dev.sluice.postgres, dev.sluice.mysql;
}

/** The MySQL and MariaDB store for Sluice, on plain JDBC. */
module dev.sluice.mysql {
  requires transitive dev.sluice;
  requires transitive java.sql;
  requires transitive dev.sluice.jdbc;

  exports dev.sluice.mysql;
}

/** The PostgreSQL store for Sluice, on plain JDBC. */
module dev.sluice.postgres {
  requires transitive dev.sluice;
  requires transitive dev.sluice.jdbc;
  requires transitive java.sql;

  exports dev.sluice.postgres;
}

package dev.sluice.postgres;

import dev.sluice.jdbc.SchemaFiles;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The store's schema: the versioned SQL files shipped in the jar ({@link
 * PostgresStore#SCHEMA_RESOURCES}), which take a table from one version to the next, the
 * baseline ({@link PostgresStore#BASELINE_RESOURCE}) a fresh install runs instead, the version a
 * table's comment records, and the check at build time that creates or migrates a table when
 * asked to, or says exactly what is missing.
 */
final class PostgresSchema {
  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,49}");
  private static final String VERSION_COMMENT = "sluice schema ";

  private PostgresSchema() {}

  /** A fresh install's SQL for {@code table}: the baseline, the name replaced. Idempotent. */
  static String sql(String table, boolean unlogged) {
    checkTable(table);
    String sql = migration(PostgresStore.BASELINE_RESOURCE, table);
    return unlogged ? sql.replace("CREATE TABLE", "CREATE UNLOGGED TABLE") : sql;
  }

  static String migration(String resource, String table) {
    return SchemaFiles.forTable(PostgresSchema.class.getResourceAsStream(resource), resource, table);
  }

  static String checkTable(String table) {
    return SchemaFiles.checkTable(table, IDENTIFIER, "a lower-case SQL identifier of at most 50"
        + " characters ([a-z_][a-z0-9_]*; use the connection's search_path for a schema)");
  }

  /**
   * Checks that {@code table} holds the schema version this Sluice needs, creating it or
   * applying the migrations it lacks when {@code createIfMissing}; several instances starting at
   * once take turns under an advisory lock.
   *
   * @throws IllegalStateException saying what is wrong and how to fix it
   */
  static void prepare(DataSource dataSource, String table, boolean createIfMissing,
      boolean unlogged) {
    try (Connection c = dataSource.getConnection()) {
      String where = SchemaFiles.describe(c);
      int found = version(c, table);
      if ((found == 0 || (found > 0 && found < PostgresStore.SCHEMA_VERSION)) && createIfMissing) {
        boolean auto = c.getAutoCommit();
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          // Several instances may start at once: one creates, the others wait and find it.
          s.execute("SELECT pg_advisory_xact_lock(hashtext('sluice schema " + table + "'))");
          int now = version(c, table);
          if (now == 0) {
            s.execute(sql(table, unlogged));
          } else {
            // an older Sluice table: the migrations it lacks, in order
            for (int v = now; v > 0 && v < PostgresStore.SCHEMA_VERSION; v++) {
              s.execute(migration(PostgresStore.SCHEMA_RESOURCES.get(v), table));
            }
          }
          c.commit();
        } catch (SQLException e) {
          c.rollback();
          throw e;
        } finally {
          c.setAutoCommit(auto);
        }
        found = version(c, table);
      }
      if (found == 0) {
        throw new IllegalStateException("table " + table + " does not exist in " + where
            + ": create it with the SQL in " + PostgresStore.BASELINE_RESOURCE.substring(1)
            + " (PostgresStore.schemaSql(\"" + table + "\", false) gives it for this name), or"
            + " the files V1__ to V" + PostgresStore.SCHEMA_VERSION + "__sluice.sql beside it in"
            + " order (as Flyway or Liquibase run them), or call createIfMissing(true) on the"
            + " builder");
      }
      if (found < 0) {
        throw new IllegalStateException("table " + table + " in " + where + " is not a Sluice"
            + " table (its comment does not say 'sluice schema N'); choose another name with"
            + " table(...)");
      }
      if (found != PostgresStore.SCHEMA_VERSION) {
        throw new IllegalStateException("table " + table + " in " + where + " has Sluice schema"
            + " version " + found + " but this Sluice needs version " + PostgresStore.SCHEMA_VERSION
            + (found < PostgresStore.SCHEMA_VERSION ? ": apply " + PostgresStore.SCHEMA_RESOURCES.subList(found, PostgresStore.SCHEMA_VERSION)
                + " from the jar (Flyway or Liquibase run them in order), or call"
                + " createIfMissing(true) on the builder" : ""));
      }
      try (PreparedStatement p = c.prepareStatement(
          "SELECT to_regprocedure(? || '_decide(text,integer,bigint,text,bigint[],integer)')")) {
        p.setString(1, table);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          if (rs.getString(1) == null) {
            throw new IllegalStateException("table " + table + " in " + where + " has schema"
                + " version " + found + " but its function " + table + "_decide is missing:"
                + " run the schema SQL again (it is idempotent)");
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL refused the store (table " + table + "): "
          + e.getMessage(), e);
    }
  }


  /** 0: no table; -1: a table that is not Sluice's; else the version its comment names. */
  private static int version(Connection c, String table) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(
        "SELECT to_regclass(?) IS NOT NULL, obj_description(to_regclass(?), 'pg_class')")) {
      p.setString(1, table);
      p.setString(2, table);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return 0;
        }
        String comment = rs.getString(2);
        if (comment == null || !comment.startsWith(VERSION_COMMENT)) {
          return -1;
        }
        try {
          return Integer.parseInt(comment.substring(VERSION_COMMENT.length()).trim());
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
  }
}

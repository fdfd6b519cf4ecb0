package dev.sluice.mysql;

import dev.sluice.jdbc.SchemaFiles;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The store's schema: the versioned SQL files shipped in the jar ({@link
 * MysqlStore#SCHEMA_RESOURCES}), the version a table's comment records, and the check at build
 * time that creates or migrates a table when asked to, or says exactly what is missing.
 */
final class MysqlSchema {
  /** At most 36 characters: the longest name derived from it (an index) stays within 64. */
  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,35}");
  private static final String VERSION_COMMENT = "sluice schema ";

  private MysqlSchema() {}

  /** The schema's SQL for {@code table}: every file in order, the name replaced. Idempotent. */
  static String sql(String table) {
    checkTable(table);
    StringBuilder all = new StringBuilder();
    for (String resource : MysqlStore.SCHEMA_RESOURCES) {
      all.append(migration(resource, table)).append('\n');
    }
    return all.toString();
  }

  static String migration(String resource, String table) {
    return SchemaFiles.forTable(MysqlSchema.class.getResourceAsStream(resource), resource, table);
  }

  /**
   * The statements of a script as the mysql client reads it: separated by the delimiter (';'
   * until a {@code DELIMITER} line changes it), lines of only a comment left out between them.
   */
  static List<String> statements(String script) {
    List<String> out = new ArrayList<>();
    String delimiter = ";";
    StringBuilder current = new StringBuilder();
    for (String line : script.split("\n", -1)) {
      String trimmed = line.trim();
      if (trimmed.regionMatches(true, 0, "DELIMITER ", 0, 10)) {
        delimiter = trimmed.substring(10).trim();
        continue;
      }
      if (current.length() == 0 && (trimmed.isEmpty() || trimmed.startsWith("--"))) {
        continue;
      }
      if (trimmed.endsWith(delimiter)) {
        current.append(line, 0, line.lastIndexOf(delimiter));
        out.add(current.toString().trim());
        current.setLength(0);
      } else {
        current.append(line).append('\n');
      }
    }
    if (!current.toString().isBlank()) {
      throw new IllegalStateException("the schema ends inside a statement: " + current);
    }
    return out;
  }

  static String checkTable(String table) {
    return SchemaFiles.checkTable(table, IDENTIFIER, "a lower-case SQL identifier of at most 36"
        + " characters ([a-z_][a-z0-9_]*; the connection's database holds it)");
  }

  /**
   * Checks that {@code table} holds the schema version this Sluice needs, creating it or
   * applying the migrations it lacks when {@code createIfMissing}; several instances starting at
   * once take turns under a named lock.
   *
   * @return whether the server is MariaDB (its {@code GET_LOCK} takes fractions of a second;
   *     MySQL's counts whole seconds)
   * @throws IllegalStateException saying what is wrong and how to fix it
   */
  static boolean prepare(DataSource dataSource, String table, boolean createIfMissing) {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      String where = SchemaFiles.describe(c);
      if (database(c) == null) {
        throw new IllegalStateException("the connection to " + where + " has no database: name"
            + " one in the JDBC URL (jdbc:mariadb://host:3306/app or jdbc:mysql://host:3306/app)");
      }
      int found = version(c, table);
      if ((found == 0 || (found > 0 && found < MysqlStore.SCHEMA_VERSION)) && createIfMissing) {
        try (Statement s = c.createStatement()) {
          // Several instances may start at once: one creates, the others wait and find it.
          try (ResultSet rs = s.executeQuery("SELECT GET_LOCK('sluice schema " + table
              + "', 60)")) {
            rs.next();
            if (rs.getInt(1) != 1) {
              throw new IllegalStateException("waited 60 s for another instance to create table "
                  + table + " in " + where);
            }
          }
          try {
            int now = version(c, table);
            List<String> files = now == 0 ? MysqlStore.SCHEMA_RESOURCES
                : MysqlStore.SCHEMA_RESOURCES.subList(Math.max(0, now),
                    MysqlStore.SCHEMA_VERSION);
            apply(c, table, files);
          } finally {
            s.execute("DO RELEASE_LOCK('sluice schema " + table + "')");
          }
        }
        found = version(c, table);
      }
      if (found == 0) {
        throw new IllegalStateException("table " + table + " does not exist in " + where
            + ": create it with the SQL in " + MysqlStore.SCHEMA_RESOURCE.substring(1)
            + " (MysqlStore.schemaSql(\"" + table + "\") gives it for this name; the mysql"
            + " client, Flyway or Liquibase can run it), or call createIfMissing(true) on the"
            + " builder");
      }
      if (found < 0) {
        throw new IllegalStateException("table " + table + " in " + where + " is not a Sluice"
            + " table (its comment does not say 'sluice schema N'); choose another name with"
            + " table(...)");
      }
      if (found != MysqlStore.SCHEMA_VERSION) {
        throw new IllegalStateException("table " + table + " in " + where + " has Sluice schema"
            + " version " + found + " but this Sluice needs version " + MysqlStore.SCHEMA_VERSION
            + (found < MysqlStore.SCHEMA_VERSION ? ": apply "
                + MysqlStore.SCHEMA_RESOURCES.subList(found, MysqlStore.SCHEMA_VERSION)
                + " from the jar (Flyway or Liquibase run them in order), or call"
                + " createIfMissing(true) on the builder" : ""));
      }
      if (!proceduresPresent(c, table)) {
        if (createIfMissing) {
          // the table is there but a procedure is not (dropped by hand): the schema again
          apply(c, table, MysqlStore.SCHEMA_RESOURCES);
        }
        if (!proceduresPresent(c, table)) {
          throw new IllegalStateException("table " + table + " in " + where + " has schema"
              + " version " + found + " but some of its procedures (" + table + "_decide and"
              + " the others) are missing: run the schema SQL again (it is idempotent), or call"
              + " createIfMissing(true) on the builder");
        }
      }
      try (Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT VERSION() LIKE '%MariaDB%'")) {
        rs.next();
        return rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("MySQL refused the store (table " + table + "): "
          + e.getMessage(), e);
    }
  }

  private static final String[] PROCEDURES = {"_decide", "_decide_group", "_live_instances",
      "_permit", "_group_permit"};

  private static boolean proceduresPresent(Connection c, String table) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) FROM"
        + " information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME IN"
        + " (?, ?, ?, ?, ?)")) {
      for (int i = 0; i < PROCEDURES.length; i++) {
        p.setString(i + 1, table + PROCEDURES[i]);
      }
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1) == PROCEDURES.length;
      }
    }
  }

  private static void apply(Connection c, String table, List<String> files) throws SQLException {
    try (Statement s = c.createStatement()) {
      for (String file : files) {
        for (String statement : statements(migration(file, table))) {
          s.execute(statement);
        }
      }
    }
  }

  private static String database(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT DATABASE()")) {
      rs.next();
      return rs.getString(1);
    }
  }


  /** 0: no table; -1: a table that is not Sluice's; else the version its comment names. */
  private static int version(Connection c, String table) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT TABLE_COMMENT FROM"
        + " information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?")) {
      p.setString(1, table);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return 0;
        }
        String comment = rs.getString(1);
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

package dev.sluice.jdbc;

import dev.sluice.jdbc.store.JdbcStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.regex.Pattern;

/** What both SQL stores' schema code does alike: their schema files, table names, messages. */
public final class SchemaFiles {
  private SchemaFiles() {}

  /**
   * The schema file {@code resource}, opened by its store as {@code in} (its module reads its
   * own resources; null if missing), for {@code table}: the default table's name ({@link
   * JdbcStore#DEFAULT_TABLE}) replaced by it.
   *
   * @throws IllegalStateException if the file is missing from the classpath
   */
  public static String forTable(InputStream in, String resource, String table) {
    if (in == null) {
      throw new IllegalStateException(resource + " is missing from the classpath");
    }
    try (in) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8)
          .replace(JdbcStore.DEFAULT_TABLE, table);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * {@code table} if {@code identifier} matches it, else an exception naming it and saying
   * which names are taken ({@code rule}).
   */
  public static String checkTable(String table, Pattern identifier, String rule) {
    if (table == null || !identifier.matcher(table).matches()) {
      throw new IllegalArgumentException("table must be " + rule + " but was "
          + (table == null ? "null" : "'" + table + "'"));
    }
    return table;
  }

  /** Where {@code c} connects, for messages: the database and the URL. */
  public static String describe(Connection c) {
    try {
      return "database " + c.getCatalog() + " at " + c.getMetaData().getURL();
    } catch (SQLException e) {
      return "the database";
    }
  }
}

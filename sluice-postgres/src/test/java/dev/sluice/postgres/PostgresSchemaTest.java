package dev.sluice.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A fresh install runs the baseline (B9__sluice.sql) alone; a table of any released version
 * takes the V files it lacks. Both end in the same schema: the same tables, columns, storage
 * options, indexes, comment and functions (each function's whole definition), compared from the
 * database's catalog, for a table created fresh, one upgraded from each version 1 to 8, and one
 * built from V1 to V9 in order as Flyway does.
 */
class PostgresSchemaTest {
  private static String freshTable() {
    return "s_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  private static void sql(String statement) throws SQLException {
    try (Connection c = TestPostgres.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  @Test
  void aFreshInstall_runsTheBaselineAlone() {
    String sql = PostgresStore.schemaSql("t", false);
    assertThat(sql).contains("sluice schema " + PostgresStore.SCHEMA_VERSION);
    for (String function : List.of("t_decide(", "t_decide_group(", "t_permit(",
        "t_group_permit(", "t_live_instances(")) {
      assertThat(sql.split(Pattern.quote("FUNCTION " + function), -1)).as(function + " written once")
          .hasSize(2);
    }
  }

  @Test
  void freshAndUpgradedTables_endInTheSameSchema() throws Exception {
    String fresh = freshTable();
    PostgresStore.builder(TestPostgres.dataSource()).table(fresh).createIfMissing(true).build();
    List<String> expected = catalog(fresh);
    assertThat(expected).as("the catalog read").hasSizeGreaterThan(20);
    for (int version = 1; version < PostgresStore.SCHEMA_VERSION; version++) {
      String table = freshTable();
      for (int v = 0; v < version; v++) {
        sql(PostgresSchema.migration(PostgresStore.SCHEMA_RESOURCES.get(v), table));
      }
      assertThat(catalog(table)).as("a version %d table before its upgrade", version)
          .isNotEqualTo(expected);
      PostgresStore.builder(TestPostgres.dataSource()).table(table).createIfMissing(true).build();
      assertThat(catalog(table)).as("a version %d table, upgraded", version)
          .isEqualTo(expected);
    }
    String flyway = freshTable();
    for (String resource : PostgresStore.SCHEMA_RESOURCES) {
      sql(PostgresSchema.migration(resource, flyway));
    }
    assertThat(catalog(flyway)).as("V1 to V9 in order").isEqualTo(expected);
    PostgresStore.builder(TestPostgres.dataSource()).table(flyway).build();
  }

  /** What the schema of {@code table} is, with its name written T. */
  private static List<String> catalog(String table) throws SQLException {
    List<String> out = new ArrayList<>();
    String[] queries = {
        "SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '')"
            + " FROM information_schema.columns WHERE table_schema = current_schema()"
            + " AND (table_name = ? OR starts_with(table_name, ? || '_'))"
            + " ORDER BY table_name, ordinal_position",
        "SELECT relname, relkind::text, coalesce(array_to_string(reloptions, ','), '')"
            + " FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
            + " AND (relname = ? OR starts_with(relname, ? || '_')) ORDER BY relname",
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
            + " AND (tablename = ? OR starts_with(tablename, ? || '_')) ORDER BY indexname",
        "SELECT conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
            + " JOIN pg_class r ON r.oid = c.conrelid WHERE r.relnamespace ="
            + " current_schema()::regnamespace AND (r.relname = ? OR starts_with(r.relname, ?"
            + " || '_')) ORDER BY conname",
        "SELECT coalesce(obj_description(to_regclass(?), 'pg_class'), '') || ?",
        "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p"
            + " WHERE p.pronamespace = current_schema()::regnamespace"
            + " AND (proname = ? OR starts_with(proname, ? || '_')) ORDER BY 1"};
    try (Connection c = TestPostgres.dataSource().getConnection()) {
      for (String q : queries) {
        try (PreparedStatement p = c.prepareStatement(q)) {
          p.setString(1, table);
          p.setString(2, q.contains("|| ?") ? "" : table);
          try (ResultSet rs = p.executeQuery()) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
              StringBuilder row = new StringBuilder();
              for (int i = 1; i <= columns; i++) {
                row.append(rs.getString(i)).append(" | ");
              }
              out.add(row.toString().replace(table, "T"));
            }
          }
        }
      }
    }
    return out;
  }
}

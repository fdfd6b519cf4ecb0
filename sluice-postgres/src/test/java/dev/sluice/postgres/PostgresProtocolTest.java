package dev.sluice.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol;
import dev.sluice.testkit.ProtocolConstants;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The functions' constants are StoreProtocol's: in every schema version, each named constant
 * equals Java's of that name (V1 to V5 used three short names, mapped below); the newest version
 * of the decide functions (V6; V7 adds permits) names every one of Java's in each function, one for one (less Redis' ARGV header), and the
 * literals of its bucket rule and of V1's saturating sum are Java's markers and bounds.
 */
class PostgresProtocolTest {
  /** The short names versions 1 to 5 used. */
  private static final Map<String, String> EARLIER_NAMES =
      Map.of("NONE", "SCRIPT_NONE", "BIG", "SCRIPT_BIG", "ARGS", "ARGS_PER_LIMIT");

  @Test
  void everyVersionsConstants_areStoreProtocols() throws IOException {
    Map<String, Long> java = ProtocolConstants.byName();
    List<String> files = new ArrayList<>(PostgresStore.SCHEMA_RESOURCES);
    files.add(PostgresStore.BASELINE_RESOURCE);
    for (String file : files) {
      Map<String, Long> constants = constants(sql(file));
      constants.forEach((name, value) -> assertThat(java)
          .as(file + ": c_" + name.toLowerCase(Locale.ROOT))
          .containsEntry(EARLIER_NAMES.getOrDefault(name, name), value));
    }
  }

  @Test
  void newestVersion_namesEveryNumberOfTheProtocol_inEachFunction() throws IOException {
    String newest = newestDecide();
    // every number but Redis' ARGV header, and the saturation bound, which V1's sluice_v1_add holds
    Map<String, Long> expected = new TreeMap<>(ProtocolConstants.byName());
    expected.keySet().removeIf(name -> name.startsWith("ARGV_") || name.equals("SCRIPT_MAX"));
    assertThat(sql(PostgresStore.SCHEMA_RESOURCE))
        .contains("LEAST(a + b, " + StoreProtocol.SCRIPT_MAX + ")");
    String[] functions = newest.split("CREATE OR REPLACE FUNCTION ");
    int plpgsql = 0;
    for (String f : functions) {
      if (f.contains("LANGUAGE plpgsql")) {
        plpgsql++;
        assertThat(constants(f)).as(f.substring(0, f.indexOf('(')))
            .isEqualTo(expected);
      }
    }
    assertThat(plpgsql).as("the decide and the group function").isEqualTo(2);
    // the bucket rule's literals
    assertThat(newest).contains("WHEN e = " + StoreProtocol.SCRIPT_NONE + " OR e <= now",
        "THEN " + StoreProtocol.SCRIPT_BIG);
    // the fast path is for the layout of one bucket of scale 1
    assertThat(newest).contains("p_layout = '" + StoreProtocol.Kind.BUCKET.letter(1) + "'");
  }

  /** The newest version that replaces the decide function (V7 adds permits, V8 permit groups; both leave it). */
  private static String newestDecide() throws IOException {
    for (int i = PostgresStore.SCHEMA_VERSION - 1; i >= 0; i--) {
      String sql = sql(PostgresStore.SCHEMA_RESOURCES.get(i));
      if (sql.contains("FUNCTION sluice_buckets_decide(")) {
        return sql;
      }
    }
    throw new AssertionError("no version defines the decide function");
  }

  private static Map<String, Long> constants(String sql) {
    Map<String, Long> constants = new TreeMap<>();
    Matcher m = Pattern.compile("(?m)^\\s+c_(\\w+) CONSTANT \\w+ := (-?\\d+);$").matcher(sql);
    while (m.find()) {
      constants.put(m.group(1).toUpperCase(Locale.ROOT), Long.parseLong(m.group(2)));
    }
    return constants;
  }

  private static String sql(String resource) throws IOException {
    try (InputStream in = PostgresStore.class.getResourceAsStream(resource)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * The permit functions name their operations {@code op_acquire} ... with the codes of
   * {@link StoreProtocol.PermitOperation}, in every schema version; the newest names each
   * operation but the count (what no other operation is).
   */
  @Test
  void permitFunctions_nameTheirOperations_withJavasCodes() throws IOException {
    Map<String, Long> newest = Map.of();
    for (String file : PostgresStore.SCHEMA_RESOURCES) {
      Map<String, Long> ops = new TreeMap<>();
      Matcher m = Pattern.compile("(?m)^\\s+op_(\\w+)\\s+CONSTANT int := (\\d+);").matcher(sql(file));
      while (m.find()) {
        String name = m.group(1).toUpperCase(Locale.ROOT);
        long code = Long.parseLong(m.group(2));
        assertThat(StoreProtocol.PermitOperation.valueOf(name).code()).as(file + ": op_"
            + m.group(1)).isEqualTo(code);
        ops.put(name, code);
      }
      if (!ops.isEmpty()) {
        newest = ops;
      }
    }
    assertThat(newest.keySet()).as("the newest permit functions' operations")
        .containsExactlyInAnyOrder("ACQUIRE", "RENEW", "RELEASE", "CANCEL");
    Matcher b = Pattern.compile("(?m)^\\s+op_(\\w+)\\s+CONSTANT int := (\\d+);")
        .matcher(sql(PostgresStore.BASELINE_RESOURCE));
    int named = 0;
    while (b.find()) {
      named++;
      assertThat(StoreProtocol.PermitOperation.valueOf(b.group(1).toUpperCase(Locale.ROOT)).code())
          .as("the baseline's op_" + b.group(1)).isEqualTo(Long.parseLong(b.group(2)));
    }
    assertThat(named).as("the baseline's two permit functions name four operations each")
        .isEqualTo(8);
  }
}

package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol;
import dev.sluice.testkit.ProtocolConstants;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The procedures' constants are StoreProtocol's: the decide procedure names every number of the
 * protocol (less Redis' ARGV header), one for one; every constant the group procedure names
 * equals Java's of that name; and the literals of the bucket rule and of the saturating sum are
 * Java's markers and bounds.
 */
class MysqlProtocolTest {
  @Test
  void theDecideProcedure_namesEveryNumberOfTheProtocol_andTheGroupsNamesOnlyJavas()
      throws IOException {
    String sql = sql(MysqlStore.SCHEMA_RESOURCE);
    Map<String, Long> expected = new TreeMap<>(ProtocolConstants.byName());
    expected.keySet().removeIf(name -> name.startsWith("ARGV_") || name.equals("SCRIPT_MAX"));
    int procedures = 0;
    for (String p : sql.split("CREATE PROCEDURE ")) {
      if (p.startsWith("sluice_buckets_decide(")) {
        procedures++;
        assertThat(constants(p)).as("sluice_buckets_decide").isEqualTo(expected);
      } else if (p.startsWith("sluice_buckets_decide_group(")) {
        procedures++;
        Map<String, Long> named = constants(p);
        assertThat(named).as("the group procedure names the constants it uses").hasSizeGreaterThan(8);
        assertThat(expected).as("sluice_buckets_decide_group").containsAllEntriesOf(named);
      }
    }
    assertThat(procedures).as("the decide and the group procedure").isEqualTo(2);
    assertThat(sql).contains("LEAST(a + b, " + StoreProtocol.SCRIPT_MAX + ")");
    assertThat(sql).contains("WHEN e = " + StoreProtocol.SCRIPT_NONE + " OR e <= now",
        "THEN " + StoreProtocol.SCRIPT_BIG);
    assertThat(sql).contains("p_layout = '" + StoreProtocol.Kind.BUCKET.letter(1) + "'");
  }

  private static Map<String, Long> constants(String sql) {
    Map<String, Long> constants = new TreeMap<>();
    Matcher m = Pattern.compile("(?m)^\\s+DECLARE c_(\\w+) \\w+ DEFAULT (-?\\d+);").matcher(sql);
    while (m.find()) {
      constants.put(m.group(1).toUpperCase(Locale.ROOT), Long.parseLong(m.group(2)));
    }
    return constants;
  }

  private static String sql(String resource) throws IOException {
    try (InputStream in = MysqlStore.class.getResourceAsStream(resource)) {
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
    for (String file : MysqlStore.SCHEMA_RESOURCES) {
      Map<String, Long> ops = new TreeMap<>();
      Matcher m = Pattern.compile("(?m)^\\s+DECLARE op_(\\w+) INT DEFAULT (\\d+);").matcher(sql(file));
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
  }
}

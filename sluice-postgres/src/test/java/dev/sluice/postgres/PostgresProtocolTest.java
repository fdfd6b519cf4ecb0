package dev.sluice.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The decide function's constants are StoreProtocol's: codes, markers, bounds, arguments. */
class PostgresProtocolTest {
  @Test
  void functionConstants_equalStoreProtocol() throws IOException {
    // the decide function in force: the newest schema file that (re)defines it
    List<String> files = PostgresStore.SCHEMA_RESOURCES;
    String sql = null;
    for (int i = files.size() - 1; i >= 0 && sql == null; i--) {
      try (InputStream in = PostgresStore.class.getResourceAsStream(files.get(i))) {
        String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        if (text.contains("FUNCTION sluice_buckets_decide(")) {
          sql = text;
        }
      }
    }
    assertThat(sql).as("a schema file defines the decide function").isNotNull();
    Map<String, Long> constants = new HashMap<>();
    Matcher m = Pattern.compile("(?m)^\\s+c_(\\w+) CONSTANT \\w+ := (-?\\d+);$").matcher(sql);
    while (m.find()) {
      constants.put(m.group(1), Long.parseLong(m.group(2)));
    }
    assertThat(constants).containsExactlyInAnyOrderEntriesOf(Map.ofEntries(
        Map.entry("none", StoreProtocol.SCRIPT_NONE),
        Map.entry("big", StoreProtocol.SCRIPT_BIG),
        Map.entry("try_acquire", (long) StoreProtocol.OP_TRY_ACQUIRE),
        Map.entry("check", (long) StoreProtocol.OP_CHECK),
        Map.entry("fill_up", (long) StoreProtocol.OP_FILL_UP),
        Map.entry("reserve", (long) StoreProtocol.OP_RESERVE),
        Map.entry("lease", (long) StoreProtocol.OP_LEASE),
        Map.entry("release", (long) StoreProtocol.OP_RELEASE),
        Map.entry("bucket", (long) StoreProtocol.KIND_BUCKET),
        Map.entry("fixed_window", (long) StoreProtocol.KIND_FIXED_WINDOW),
        Map.entry("sliding_window", (long) StoreProtocol.KIND_SLIDING_WINDOW),
        Map.entry("args", (long) StoreProtocol.ARGS_PER_LIMIT)));
    // the fast path is for the layout of one bucket of scale 1
    assertThat(sql).contains("p_layout = '" + StoreProtocol.Kind.BUCKET.letter(1) + "'");
  }
}

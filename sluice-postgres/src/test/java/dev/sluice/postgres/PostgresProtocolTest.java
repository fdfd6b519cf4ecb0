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
        Map.entry("try_acquire", (long) StoreProtocol.Operation.TRY_ACQUIRE.code()),
        Map.entry("check", (long) StoreProtocol.Operation.CHECK.code()),
        Map.entry("fill_up", (long) StoreProtocol.Operation.FILL_UP.code()),
        Map.entry("reserve", (long) StoreProtocol.Operation.RESERVE.code()),
        Map.entry("lease", (long) StoreProtocol.Operation.LEASE.code()),
        Map.entry("release", (long) StoreProtocol.Operation.RELEASE.code()),
        Map.entry("bucket", (long) StoreProtocol.Kind.BUCKET.code()),
        Map.entry("fixed_window", (long) StoreProtocol.Kind.FIXED_WINDOW.code()),
        Map.entry("sliding_window", (long) StoreProtocol.Kind.SLIDING_WINDOW.code()),
        Map.entry("args", (long) StoreProtocol.ARGS_PER_LIMIT)));
    // the fast path is for the layout of one bucket of scale 1
    assertThat(sql).contains("p_layout = '" + StoreProtocol.Kind.BUCKET.letter(1) + "'");
  }
}

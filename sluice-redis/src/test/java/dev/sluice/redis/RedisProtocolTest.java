package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** decide.lua's constants are StoreProtocol's: codes, markers, bounds and the argument count. */
class RedisProtocolTest {
  @Test
  void scriptConstants_equalStoreProtocol() throws IOException {
    String lua;
    try (InputStream in = RedisStore.class.getResourceAsStream("/dev/sluice/redis/decide.lua")) {
      lua = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Map<String, Long> constants = new HashMap<>();
    Matcher m = Pattern.compile("(?m)^local ([A-Z_]+(?:, [A-Z_]+)*) = (-?\\d+(?:, -?\\d+)*)$")
        .matcher(lua);
    while (m.find()) {
      String[] names = m.group(1).split(", ");
      String[] values = m.group(2).split(", ");
      assertThat(values).as(m.group()).hasSameSizeAs(names);
      for (int i = 0; i < names.length; i++) {
        constants.put(names[i], Long.parseLong(values[i]));
      }
    }
    assertThat(constants).containsExactlyInAnyOrderEntriesOf(Map.ofEntries(
        Map.entry("NONE", StoreProtocol.SCRIPT_NONE),
        Map.entry("MAXT", StoreProtocol.SCRIPT_MAX),
        Map.entry("BIG", StoreProtocol.SCRIPT_BIG),
        Map.entry("TRY", (long) StoreProtocol.OP_TRY_ACQUIRE),
        Map.entry("CHECK", (long) StoreProtocol.OP_CHECK),
        Map.entry("FILL", (long) StoreProtocol.OP_FILL_UP),
        Map.entry("RESERVE", (long) StoreProtocol.OP_RESERVE),
        Map.entry("LEASE", (long) StoreProtocol.OP_LEASE),
        Map.entry("RELEASE", (long) StoreProtocol.OP_RELEASE),
        Map.entry("BUCKET", (long) StoreProtocol.KIND_BUCKET),
        Map.entry("FIXED", (long) StoreProtocol.KIND_FIXED_WINDOW),
        Map.entry("SLIDING", (long) StoreProtocol.KIND_SLIDING_WINDOW),
        Map.entry("ARGS", (long) StoreProtocol.ARGS_PER_LIMIT)));
  }
}

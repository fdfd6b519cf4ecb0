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
        Map.entry("TRY", (long) StoreProtocol.Operation.TRY_ACQUIRE.code()),
        Map.entry("CHECK", (long) StoreProtocol.Operation.CHECK.code()),
        Map.entry("FILL", (long) StoreProtocol.Operation.FILL_UP.code()),
        Map.entry("RESERVE", (long) StoreProtocol.Operation.RESERVE.code()),
        Map.entry("LEASE", (long) StoreProtocol.Operation.LEASE.code()),
        Map.entry("RELEASE", (long) StoreProtocol.Operation.RELEASE.code()),
        Map.entry("BUCKET", (long) StoreProtocol.Kind.BUCKET.code()),
        Map.entry("FIXED", (long) StoreProtocol.Kind.FIXED_WINDOW.code()),
        Map.entry("SLIDING", (long) StoreProtocol.Kind.SLIDING_WINDOW.code()),
        Map.entry("ARGS", (long) StoreProtocol.ARGS_PER_LIMIT)));
  }
}

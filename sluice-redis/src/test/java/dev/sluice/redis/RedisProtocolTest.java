package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol;
import dev.sluice.testkit.ProtocolConstants;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * decide.lua names every number of the protocol once, with StoreProtocol's name: operation and
 * kind codes, markers and bounds, ARGV and argument offsets, slot offsets and slot counts. Each
 * is compared with Java's, and each of Java's is in the script.
 */
class RedisProtocolTest {
  @Test
  void scriptConstants_areStoreProtocols_oneForOne() throws IOException {
    String lua;
    try (InputStream in = RedisStore.class.getResourceAsStream("/dev/sluice/redis/decide.lua")) {
      lua = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Map<String, Long> script = new TreeMap<>();
    Matcher m = Pattern.compile("(?m)^local ([A-Z_]+(?:, [A-Z_]+)*) = (-?\\d+(?:, -?\\d+)*)$")
        .matcher(lua);
    while (m.find()) {
      String[] names = m.group(1).split(", ");
      String[] values = m.group(2).split(", ");
      assertThat(values).as(m.group()).hasSameSizeAs(names);
      for (int i = 0; i < names.length; i++) {
        script.put(names[i], Long.parseLong(values[i]));
      }
    }
    assertThat(script).isEqualTo(ProtocolConstants.byName());
    // the fast path is for the layout of one bucket of scale 1
    assertThat(lua).contains("ARGV[1 + ARGV_LAYOUT] == '" + StoreProtocol.Kind.BUCKET.letter(1) + "'");
  }

  /**
   * permits.lua names the permit protocol's numbers (operations, ARGV offsets and lengths) with
   * StoreProtocol's names, one for one, and reads ARGV only through them.
   */
  @Test
  void permitsScript_namesThePermitProtocol_oneForOne() throws IOException {
    String lua;
    try (InputStream in = RedisStore.class.getResourceAsStream("/dev/sluice/redis/permits.lua")) {
      lua = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Map<String, Long> script = locals(lua);
    script.keySet().removeIf(name -> !name.startsWith("PERMIT_"));   // the script's own, CHUNK
    assertThat(script).isEqualTo(ProtocolConstants.permits());
    assertThat(Pattern.compile("ARGV\\[\\d+\\]").matcher(lua).find())
        .as("no ARGV read by a bare number").isFalse();
  }

  private static Map<String, Long> locals(String lua) {
    Map<String, Long> script = new TreeMap<>();
    Matcher m = Pattern.compile("(?m)^local ([A-Z_]+(?:, [A-Z_]+)*) = (-?\\d+(?:, -?\\d+)*)$")
        .matcher(lua);
    while (m.find()) {
      String[] names = m.group(1).split(", ");
      String[] values = m.group(2).split(", ");
      assertThat(values).as(m.group()).hasSameSizeAs(names);
      for (int i = 0; i < names.length; i++) {
        script.put(names[i], Long.parseLong(values[i]));
      }
    }
    return script;
  }
}

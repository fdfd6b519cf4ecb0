package dev.sluice.redis;

import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import dev.sluice.testkit.GoldenVectorSuite;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.StringJoiner;
import java.util.concurrent.atomic.AtomicLong;

/** decide.lua writes the state core computes, bit for bit, for every golden vector. */
class RedisGoldenVectorTest extends GoldenVectorSuite {
  private final AtomicLong now = new AtomicLong();
  private final RedisStore store = RedisStore.builder(TestRedis.connection())
      .prefix("golden:").commandTimeout(TestRedis.SEMANTICS_TIMEOUT).timeSourceMicros(now::get)
      .build();
  private final RedisCommands<String, String> redis = TestRedis.connection().sync();

  @Override
  protected void put(String key, String layout, long[] state) {
    if (state == null) {
      redis.del(store.stateKey(key));
      return;
    }
    redis.psetex(store.stateKey(key), 600_000, encode(layout, state, written++ % 2 == 0));
  }

  /** Alternates the text form of earlier builds with the compact one: both must be read. */
  private long written;

  /**
   * A state as decide.lua keeps it: one bucket as an integer ("E"; "-E" then R in three digits
   * for [E, R] with R below 1,000), else, or when {@code text}, "layout|slot,slot,...".
   */
  static String encode(String layout, long[] state, boolean text) {
    if (!text && layout.equals("b") && state[0] >= 0) {
      return Long.toString(state[0]);
    }
    if (!text && layout.equals("r") && state[0] >= 0 && state[0] < 9e15 && state[1] < 1000) {
      return "-" + state[0] + String.format("%03d", state[1]);
    }
    StringJoiner slots = new StringJoiner(",");
    for (long v : state) {
      slots.add(Long.toString(v == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : v));
    }
    return layout + "|" + slots;
  }

  /** The state in either form if kept under this layout, else null. */
  static long[] decode(String layout, String stored) {
    if (stored == null) {
      return null;
    }
    char c = stored.charAt(0);
    if (c >= '0' && c <= '9') {
      return layout.equals("b") ? new long[] {Long.parseLong(stored)} : null;
    }
    if (c == '-') {
      return layout.equals("r") ? new long[] {Long.parseLong(stored.substring(1, stored.length() - 3)),
          Long.parseLong(stored.substring(stored.length() - 3))} : null;
    }
    if (!stored.startsWith(layout + "|")) {
      return null;
    }
    String[] parts = stored.substring(layout.length() + 1).split(",");
    long[] state = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      state[i] = Long.parseLong(parts[i]);
    }
    return state;
  }

  @Override
  protected Observation apply(String key, StoreRequest request, long at) {
    now.set(at);
    return store.apply(key, request);
  }

  @Override
  protected long[] get(String key, String layout) {
    return decode(layout, redis.get(store.stateKey(key)));
  }

  private String groupKey(String group, String key) {
    return key == null ? store.parentKey(group) : store.memberKey(group, key);
  }

  @Override
  protected void putGroupState(String group, String key, String layout, long[] state) {
    String redisKey = groupKey(group, key);
    if (state == null) {
      redis.del(redisKey);
      return;
    }
    redis.psetex(redisKey, 600_000, encode(layout, state, written++ % 2 == 0));
  }

  @Override
  protected long[] getGroupState(String group, String key, String layout) {
    return decode(layout, redis.get(groupKey(group, key)));
  }

  @Override
  protected Observation applyGroup(String group, String key, StoreRequest request, long at) {
    now.set(at);
    return store.applyGroup(group, key, request);
  }
}

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
      .prefix("golden:").timeSourceMicros(now::get).build();
  private final RedisCommands<String, String> redis = TestRedis.connection().sync();

  @Override
  protected void put(String key, String layout, long[] state) {
    if (state == null) {
      redis.del(store.stateKey(key));
      return;
    }
    StringJoiner slots = new StringJoiner(",");
    for (long v : state) {
      slots.add(Long.toString(v == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : v));
    }
    redis.psetex(store.stateKey(key), 600_000, layout + "|" + slots);
  }

  @Override
  protected Observation apply(String key, StoreRequest request, long at) {
    now.set(at);
    return store.apply(key, request);
  }

  @Override
  protected long[] get(String key, String layout) {
    String stored = redis.get(store.stateKey(key));
    if (stored == null || !stored.startsWith(layout + "|")) {
      return null;
    }
    String[] parts = stored.substring(layout.length() + 1).split(",");
    long[] state = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      state[i] = Long.parseLong(parts[i]);
    }
    return state;
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
    StringJoiner slots = new StringJoiner(",");
    for (long v : state) {
      slots.add(Long.toString(v == StoreRequest.NONE ? StoreProtocol.SCRIPT_NONE : v));
    }
    redis.psetex(redisKey, 600_000, layout + "|" + slots);
  }

  @Override
  protected long[] getGroupState(String group, String key, String layout) {
    String stored = redis.get(groupKey(group, key));
    if (stored == null || !stored.startsWith(layout + "|")) {
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
  protected Observation applyGroup(String group, String key, StoreRequest request, long at) {
    now.set(at);
    return store.applyGroup(group, key, request);
  }
}

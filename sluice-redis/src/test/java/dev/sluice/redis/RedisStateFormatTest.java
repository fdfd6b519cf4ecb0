package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.spi.StoreReference;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A single bucket's state is an integer that Redis keeps integer-encoded ("E", or "-E" then R in
 * three digits), and a rolling upgrade loses nothing: keys written by the previous build's script
 * (the text form "b|E", "r|E,R"; decide-text-state.lua in the test resources is that script as
 * it shipped) decide after the upgrade exactly as keys that were written by this build all
 * along.
 */
class RedisStateFormatTest {
  private final AtomicLong now = new AtomicLong(1_763_900_000_000_000L);
  private final RedisStore store = RedisStore.builder(TestRedis.connection())
      .prefix("format:" + System.nanoTime() + ":").timeSourceMicros(now::get).build();
  private final RedisCommands<String, String> redis = TestRedis.connection().sync();

  @Test
  void singleBucket_isStoredAsAnIntegerThatRedisEncodesAsOne() {
    for (Limit limit : List.of(Limit.leakyBucket(10, Rate.perSecond(1000)),
        Limit.leakyBucket(5, Rate.perSecond(3)), Limit.gcra(Rate.perMinute(7), 4))) {
      StoreReference ref = StoreReference.of(List.of(limit), 1_000_000);
      String key = "int-" + ref.layout() + limit.hashCode();
      store.apply(key, ref.request(Operation.TRY_ACQUIRE, 1.5));
      String stored = redis.get(store.stateKey(key));
      assertThat(stored).as("%s", limit).matches("-?[1-9][0-9]*");
      assertThat(redis.objectEncoding(store.stateKey(key))).as("%s: %s", limit, stored)
          .isEqualTo("int");
      assertThat(redis.pttl(store.stateKey(key))).as("expires").isPositive();
    }
  }

  @Test
  void keysWrittenByThePreviousBuild_decideAsIfWrittenByThisOne() throws IOException {
    String old;
    try (InputStream in = getClass().getResourceAsStream("decide-text-state.lua")) {
      old = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String oldSha = redis.scriptLoad(old);
    Random random = new Random(30);
    for (Limit limit : List.of(Limit.leakyBucket(5, Rate.perSecond(3)),
        Limit.leakyBucket(10, Rate.perSecond(1000)),
        Limit.leakyBucket(4, Rate.perSecond(1.5)).withPenalty(java.time.Duration.ofSeconds(1)))) {
      StoreReference ref = StoreReference.of(List.of(limit), 1_000_000);
      for (int run = 0; run < 40; run++) {
        String upgraded = "upgraded-" + run;
        String control = "control-" + run;
        int upgradeAt = random.nextInt(20);
        boolean sawText = false;
        for (int step = 0; step < 40; step++) {
          now.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(700_000));
          // before the upgrade no reserve: the previous build's reserve was the one issue 30 fixed
          Operation op = Operation.values()[random.nextInt(step < upgradeAt ? 3 : 4)];
          StoreRequest request = ref.request(op, (1 + random.nextInt(300)) / 100.0);
          Observation seen;
          if (step < upgradeAt) {
            List<Object> reply = redis.evalsha(oldSha, ScriptOutputType.MULTI,
                new String[] {store.stateKey(upgraded)}, store.args(request));
            long[] state = new long[reply.size() - 1];
            for (int i = 0; i < state.length; i++) {
              state[i] = (Long) reply.get(i + 1);
            }
            seen = new Observation((Long) reply.get(0), state);
            String stored = redis.get(store.stateKey(upgraded));
            sawText |= stored != null && stored.contains("|");
          } else {
            seen = store.apply(upgraded, request);
          }
          Observation expected = store.apply(control, request);
          assertThat(seen.normalizedState()).as("%s run %d step %d (upgrade at %d)", limit, run,
              step, upgradeAt).containsExactly(expected.normalizedState());
        }
        if (upgradeAt > 5) {
          assertThat(sawText).as("the previous build wrote its text form").isTrue();
        }
      }
    }
  }
}

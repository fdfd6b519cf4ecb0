package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.redis.RedisStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import redis.embedded.RedisServer;

/**
 * Bytes of Redis memory per limited key ({@code INFO memory}'s {@code used_memory}, after minus
 * before, over the keys), in one Redis: Sluice's single bucket at a rate of whole microseconds
 * (state "E") and at 3/s (state [E, R]), the floor (an integer under the same key name with an
 * expiry, Sluice's own key names), and Bucket4j's Lettuce backend (same keys, its own state).
 * Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.RedisMemoryPerKey [redis://host:port] [keys]}; with no URI it starts a
 * Redis 6.2 (embedded-redis) on loopback.
 */
public final class RedisMemoryPerKey {
  private RedisMemoryPerKey() {}

  public static void main(String[] args) throws Exception {
    String uri = args.length > 0 && args[0].startsWith("redis") ? args[0] : null;
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    RedisServer server = LoadHarness.embeddedRedisUnless(uri);
    uri = LoadHarness.redisUri(uri, server);
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> conn = client.connect();
        StatefulRedisConnection<byte[], byte[]> bytes = client.connect(ByteArrayCodec.INSTANCE);
        RedisStore store = RedisStore.builder(uri).build()) {
      RedisCommands<String, String> redis = conn.sync();
      redis.configSet("maxmemory-policy", "noeviction");
      System.out.printf(Locale.ROOT, "redis %s, %,d keys, used_memory after minus before, per key%n",
          redis.info("server").lines().filter(l -> l.startsWith("redis_version:")).findFirst()
              .orElse("?"), n);
      String[] names = new String[n];
      for (int i = 0; i < n; i++) {
        names[i] = "user:" + i;
      }
      // the floor: Sluice's own key names, an integer value Redis keeps integer-encoded, and an
      // expiry
      double floor = measure(redis, () -> {
        for (String k : names) {
          redis.psetex(stateKey(k), 3_600_000, "1763900000000000");
        }
      });
      row("integer + expiry, same key names (the floor)", floor, floor);
      RateLimiter whole = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perHour(1)))
          .store(store).build();
      row("Sluice leaky bucket, 1/h (state E)", measure(redis, () -> {
        for (String k : names) {
          whole.tryAcquire(k);
        }
      }), floor);
      RateLimiter scaled = Sluice.builder()
          .limit(Limit.leakyBucket(100_000, Rate.perSecond(3))).store(store).build();
      row("Sluice leaky bucket, 3/s (state E, R)", measure(redis, () -> {
        for (String k : names) {
          scaled.tryAcquire(k, 10_000);   // empty again in an hour
        }
      }), floor);
      row("the text form earlier builds wrote (b|E)", measure(redis, () -> {
        for (String k : names) {
          redis.psetex(stateKey(k), 3_600_000, "b|1763900000000000");
        }
      }), floor);
      LettuceBasedProxyManager<byte[]> b4j = Bucket4jLettuce.casBasedBuilder(bytes)
          .expirationAfterWrite(ExpirationAfterWriteStrategy
              .basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
          .build();
      BucketConfiguration conf = BucketConfiguration.builder()
          .addLimit(l -> l.capacity(10).refillGreedy(1, Duration.ofHours(1))).build();
      row("Bucket4j, Lettuce CAS backend", measure(redis, () -> {
        for (String k : names) {
          b4j.builder().build(stateKey(k).getBytes(StandardCharsets.UTF_8), () -> conf)
              .tryConsume(1);
        }
      }), floor);
    } finally {
      client.shutdown();
      if (server != null) {
        server.stop();
      }
    }
  }

  /** Sluice's key for a limited key: the default prefix, the key as its hash tag. */
  private static String stateKey(String key) {
    return "sluice:{" + key + "}";
  }

  private static void row(String what, double bytes, double floor) {
    System.out.printf(Locale.ROOT, "  %-46s %7.1f bytes/key  %5.2fx the floor%n", what, bytes,
        bytes / floor);
  }

  /** used_memory after writing the keys minus before, per key; the keys are deleted after. */
  private static double measure(RedisCommands<String, String> redis, Runnable write) {
    redis.flushall();
    long before = usedMemory(redis);
    write.run();
    long keys = redis.dbsize();
    long after = usedMemory(redis);
    String first = redis.randomkey();
    String value = redis.type(first).equals("string") ? redis.get(first) : redis.type(first);
    if (!value.chars().allMatch(c -> c >= 0x20 && c < 0x7f)) {
      value = "(binary, " + redis.strlen(first) + " bytes)";
    }
    System.out.printf(Locale.ROOT, "  (a key: %s = %s, OBJECT ENCODING %s, TTL %s ms)%n", first,
        value, redis.objectEncoding(first), redis.pttl(first));
    redis.flushall();
    return (after - before) / (double) keys;
  }

  private static long usedMemory(RedisCommands<String, String> redis) {
    for (String line : redis.info("memory").split("\r?\n")) {
      if (line.startsWith("used_memory:")) {
        return Long.parseLong(line.substring("used_memory:".length()).trim());
      }
    }
    throw new IllegalStateException("no used_memory in INFO memory");
  }
}

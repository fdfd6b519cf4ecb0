package dev.sluice.benchmarks;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.redis.RedisStore;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;
import redis.embedded.RedisServer;

/**
 * Acquire-and-release pairs per second on one Redis: Sluice's concurrency
 * limiter on a {@link RedisStore} against a plain sorted-set script pair doing the same work
 * ({@code plain}: drop ended leases, count, add the permit with its lease unless held, move the
 * expiry only later; remove the permit while its lease runs and answer the count) and against a
 * bare pair doing less ({@code bare}: a release that removes ended leases too and answers
 * nothing else), sent through Lettuce with EVALSHA, one call each way as Sluice makes. 1, 16 and 64 callers, on one
 * hot key (limit high enough that every pair fits) and on 100,000 keys. The {@code store} rows
 * call the store's acquire and release directly (no limiter): the script's share of the cost. The
 * {@code timed} rows send the plain pair through a client with a per-command timeout, as the
 * store's connection has (Lettuce's {@code TimeoutOptions}): what that timeout costs a client.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.RedisPermitLoad [redis://host:port] [seconds]}; with no URI it starts a
 * Redis 6.2 (embedded-redis) on loopback. {@code -Drounds=N} (default 1) runs each cell's
 * contenders N times in turn, each round starting with the next one, and prints the medians.
 */
public final class RedisPermitLoad {
  /**
   * The plain scripts: the same work as Sluice's permits, written for this one case (weight 1,
   * no group, one fixed ceiling): drop ended leases, count, add the permit with its lease unless
   * it is held already, and move the set's expiry only later; a release removes the permit only
   * while its lease runs (a release after it changes nothing) and answers the count. Both answer
   * {done, in flight, now}, as Sluice's do.
   */
  static final String PLAIN_ACQUIRE = String.join("\n",
      "local t = redis.call('TIME')",
      "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
      "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)",
      "local n = redis.call('ZCARD', KEYS[1])",
      "if n >= tonumber(ARGV[2]) then return {0, n, now} end",
      "local expires = now + tonumber(ARGV[3])",
      "if redis.call('ZADD', KEYS[1], 'NX', expires, ARGV[1]) == 0 then return {1, n, now} end",
      "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then",
      "  redis.call('PEXPIRE', KEYS[1], ARGV[3])",
      "end",
      "return {1, n + 1, now}");
  static final String PLAIN_RELEASE = String.join("\n",
      "local t = redis.call('TIME')",
      "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
      "local score = redis.call('ZSCORE', KEYS[1], ARGV[1])",
      "local removed = 0",
      "if score and tonumber(score) > now then removed = redis.call('ZREM', KEYS[1], ARGV[1]) end",
      "return {removed, redis.call('ZCARD', KEYS[1]), now}");

  /**
   * The bare scripts: less than the same work (a release removes an ended lease too, and answers
   * nothing but whether it removed; the expiry is set at every acquire), the floor of any
   * sorted-set permit limiter.
   */
  static final String ACQUIRE = String.join("\n",
      "local t = redis.call('TIME')",
      "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
      "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)",
      "if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end",
      "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])",
      "redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))",
      "return 1");
  static final String RELEASE = "return redis.call('ZREM', KEYS[1], ARGV[1])";

  private RedisPermitLoad() {}

  /** The plain pair on {@code redis}: acquire, and release if acquired. */
  private static boolean plainPair(RedisCommands<String, String> redis, String acquireSha,
      String releaseSha, String plainKey, String id) {
    String[] key = {plainKey};
    List<Long> got = redis.evalsha(acquireSha, ScriptOutputType.MULTI, key, id, "1000000",
        "30000");
    if (got.get(0) != 1L) {
      return false;
    }
    redis.evalsha(releaseSha, ScriptOutputType.MULTI, key, id);
    return true;
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /**
   * Prints what the scripts cost on the Redis thread since the last statistics reset: INFO
   * commandstats' microseconds per EVALSHA (acquires and releases averaged).
   */
  private static void scriptCost(RedisCommands<String, String> redis) {
    for (String line : redis.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_evalsha:")) {
        for (String field : line.substring(line.indexOf(':') + 1).split(",")) {
          if (field.startsWith("usec_per_call=")) {
            System.out.printf(Locale.ROOT, "%-10s redis EVALSHA %s us a call%n", "",
                field.substring("usec_per_call=".length()));
          }
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    String uri = args.length > 0 && args[0].startsWith("redis") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    int rounds = Integer.getInteger("rounds", 1);
    RedisServer server = LoadHarness.embeddedRedisUnless(uri);
    uri = LoadHarness.redisUri(uri, server);
    System.out.printf(Locale.ROOT, "redis: %s, %d s per run, %d cores; pairs (acquire +"
        + " release) per second%n", uri, seconds, Runtime.getRuntime().availableProcessors());
    LoadHarness.header();
    RedisClient client = RedisClient.create(uri);
    // the plain pair again, on a client with a per-command timeout as the store's connection has
    RedisClient timedClient = RedisClient.create(uri);
    timedClient.setOptions(ClientOptions.builder()
        .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(5))).build());
    try (RedisStore store = RedisStore.builder(uri).prefix("perm:")
        .commandTimeout(Duration.ofSeconds(5)).build();
        ConcurrencyLimiter sluice = ConcurrencyLimiter.builder().limit(1_000_000)
            .lease(Duration.ofSeconds(30)).store(store).build();
        StatefulRedisConnection<String, String> conn = client.connect();
        StatefulRedisConnection<String, String> timedConn = timedClient.connect()) {
      RedisCommands<String, String> redis = conn.sync();
      RedisCommands<String, String> timed = timedConn.sync();
      String acquireSha = redis.scriptLoad(ACQUIRE);
      String releaseSha = redis.scriptLoad(RELEASE);
      String plainAcquireSha = redis.scriptLoad(PLAIN_ACQUIRE);
      String plainReleaseSha = redis.scriptLoad(PLAIN_RELEASE);
      AtomicLong ids = new AtomicLong();
      for (int keys : new int[] {1, 100_000}) {
        String[] names = new String[keys];
        String[] plainKeys = new String[keys];
        for (int i = 0; i < keys; i++) {
          names[i] = "tenant:" + i;
          plainKeys[i] = "plain:{tenant:" + i + "}:permits";
        }
        for (int callers : new int[] {1, 16, 64}) {
          Map<String, IntPredicate> pairs = new LinkedHashMap<>();
          pairs.put("sluice", k -> {
            Acquisition a = sluice.tryAcquire(names[k]);
            if (!a.isAcquired()) {
              return false;
            }
            a.permit().close();
            return true;
          });
          pairs.put("store", k -> {
            String id = "s" + Long.toString(ids.incrementAndGet(), 36);
            if (!store.acquire(names[k], id, 1, 1_000_000, 30_000).done()) {
              return false;
            }
            store.release(names[k], id, 1);
            return true;
          });
          pairs.put("plain", k -> plainPair(redis, plainAcquireSha, plainReleaseSha,
              plainKeys[k], Long.toString(ids.incrementAndGet(), 36)));
          pairs.put("timed", k -> plainPair(timed, plainAcquireSha, plainReleaseSha,
              plainKeys[k], Long.toString(ids.incrementAndGet(), 36)));
          pairs.put("bare", k -> {
            String id = Long.toString(ids.incrementAndGet(), 36);
            String[] key = {plainKeys[k]};
            Long got = redis.evalsha(acquireSha, ScriptOutputType.INTEGER, key, id, "1000000",
                "30000");
            if (got == null || got != 1L) {
              return false;
            }
            redis.evalsha(releaseSha, ScriptOutputType.INTEGER, key, id);
            return true;
          });
          // rounds in turn, each starting with a different contender, so that neither the
          // host's drift nor the order favours one; the medians decide
          List<String> order = new ArrayList<>(pairs.keySet());
          Map<String, List<Double>> rates = new LinkedHashMap<>();
          for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < order.size(); i++) {
              String name = order.get((i + round) % order.size());
              redis.configResetstat();
              rates.computeIfAbsent(name, n -> new ArrayList<>())
                  .add(LoadHarness.run(name, keys, callers, seconds, pairs.get(name)));
              scriptCost(redis);
            }
          }
          double plain = median(rates.get("plain"));
          System.out.printf(Locale.ROOT, "%-10s %-8s %7d median of %d: sluice %.0f, store %.0f,"
              + " plain %.0f, timed %.0f, bare %.0f; sluice / plain %.2f, store / plain %.2f%n",
              "median", keys == 1 ? "hot" : keys, callers, rounds, median(rates.get("sluice")),
              median(rates.get("store")), plain, median(rates.get("timed")),
              median(rates.get("bare")), median(rates.get("sluice")) / plain,
              median(rates.get("store")) / plain);
        }
      }
    } finally {
      client.shutdown();
      timedClient.shutdown();
      if (server != null) {
        server.stop();
      }
    }
  }
}

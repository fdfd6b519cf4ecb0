package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.redis.RedisStore;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import org.redisson.Redisson;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateIntervalUnit;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.embedded.RedisServer;

/**
 * Decisions per second and latency against one Redis, Sluice against Bucket4j (Lettuce,
 * compare-and-swap) and Redisson's RRateLimiter, with 1, 16 and 64 concurrent callers on one hot
 * key and on 100,000 keys. Every limiter is configured so that (almost) every call is admitted.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.RedisLoad
 * [redis://host:port] [seconds]}; with no URI it starts a Redis 6.2 (embedded-redis) on loopback.
 */
public final class RedisLoad {
  private static final double RATE = 1_000_000d;   // one unit = 1 µs: exact on every store

  private RedisLoad() {}

  public static void main(String[] args) throws Exception {
    String uri = args.length > 0 && args[0].startsWith("redis") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    RedisServer server = LoadHarness.embeddedRedisUnless(uri);
    uri = LoadHarness.redisUri(uri, server);
    System.out.printf(Locale.ROOT, "redis: %s, %d s per run, %d cores%n", uri, seconds,
        Runtime.getRuntime().availableProcessors());
    LoadHarness.header();
    RedisClient client = RedisClient.create(uri);
    try (RedisStore store = RedisStore.builder(uri).commandTimeout(Duration.ofSeconds(5)).build();
        StatefulRedisConnection<byte[], byte[]> bytes = client.connect(ByteArrayCodec.INSTANCE)) {
      RateLimiter sluice = Sluice.builder().limit(Limit.leakyBucket(RATE, Rate.perSecond(RATE)))
          .store(store).build();
      LettuceBasedProxyManager<byte[]> b4j = Bucket4jLettuce.casBasedBuilder(bytes).build();
      BucketConfiguration conf = BucketConfiguration.builder()
          .addLimit(l -> l.capacity((long) RATE).refillGreedy((long) RATE, Duration.ofSeconds(1))).build();
      ConcurrentHashMap<Integer, BucketProxy> b4jBuckets = new ConcurrentHashMap<>();
      Config config = new Config();
      config.useSingleServer().setAddress(uri).setConnectionPoolSize(64).setConnectionMinimumIdleSize(16);
      RedissonClient redisson = Redisson.create(config);
      ConcurrentHashMap<Integer, RRateLimiter> rLimiters = new ConcurrentHashMap<>();
      try {
        rawScript(uri);
        for (int keys : new int[] {1, 100_000}) {
          String[] names = new String[keys];
          for (int i = 0; i < keys; i++) {
            names[i] = "user:" + i;
          }
          for (int callers : new int[] {1, 16, 64}) {
            LoadHarness.run("sluice", keys, callers, seconds, k -> sluice.tryAcquire(names[k]).isAllowed());
            LoadHarness.run("bucket4j", keys, callers, seconds, k -> b4jBuckets.computeIfAbsent(k,
                i -> b4j.builder().build(("b4j:" + names[i]).getBytes(StandardCharsets.UTF_8), () -> conf))
                .tryConsume(1));
            LoadHarness.run("redisson", keys, callers, seconds, k -> rLimiters.computeIfAbsent(k, i -> {
              RRateLimiter r = redisson.getRateLimiter("rr:" + names[i]);
              r.trySetRate(RateType.OVERALL, 1_000_000, 1, RateIntervalUnit.SECONDS);
              return r;
            }).tryAcquire(1));
          }
        }
      } finally {
        redisson.shutdown();
      }
    } finally {
      client.shutdown();
      if (server != null) {
        server.stop();
      }
    }
  }

  /**
   * The ceiling for one Redis: the same script, with the same arguments as Sluice's calls, sent
   * by redis-benchmark (from Debian's redis-tools) with 1, 16 and 64 connections.
   */
  private static void rawScript(String uri) throws Exception {
    String script;
    try (java.io.InputStream in = RedisStore.class.getResourceAsStream("decide.lua")) {
      script = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    io.lettuce.core.RedisURI u = io.lettuce.core.RedisURI.create(uri);
    RedisClient c = RedisClient.create(u);
    String sha;
    try (StatefulRedisConnection<String, String> conn = c.connect()) {
      sha = conn.sync().scriptLoad(script);
    } finally {
      c.shutdown();
    }
    for (String keys : new String[] {"hot", "100000"}) {
      for (int callers : new int[] {1, 16, 64}) {
        List<String> cmd = new ArrayList<>(List.of("redis-benchmark", "-h", u.getHost(), "-p",
            Integer.toString(u.getPort()), "-c", Integer.toString(callers), "-n", "300000", "-q"));
        if (!keys.equals("hot")) {
          cmd.addAll(List.of("-r", keys));
        }
        // op tryAcquire, Redis TIME, one bucket: capacity 1e6 µs (1e6 per second), cost 1 µs,
        // scale 1 (StoreProtocol's six arguments per limit), then the count, 1
        cmd.addAll(List.of("EVALSHA", sha, "1",
            keys.equals("hot") ? "sluice:{user:0}" : "sluice:{user:__rand_int__}",
            "0", "-1", "b", "0", "0", "1000000", "0", "0", "1", "1", "1"));
        Process p;
        try {
          p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
          System.out.println("raw script: redis-benchmark not found (apt-get install redis-tools)");
          return;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        String line = out.lines().filter(x -> x.contains("requests per second")).reduce((a, b) -> b).orElse(out);
        line = line.substring(line.lastIndexOf('\r') + 1).trim();
        java.util.regex.Matcher m = java.util.regex.Pattern
            .compile("([0-9.]+) requests per second, p50=([0-9.]+) msec").matcher(line);
        if (m.find()) {
          System.out.printf(Locale.ROOT, "%-10s %-8s %7d %12.0f %10.1f %10s%n", "raw-script", keys,
              callers, Double.parseDouble(m.group(1)), Double.parseDouble(m.group(2)) * 1000, "-");
        } else {
          System.out.println("raw script: " + line);
        }
      }
    }
  }
}

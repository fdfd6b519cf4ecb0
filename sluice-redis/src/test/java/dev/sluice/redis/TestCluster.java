package dev.sluice.redis;

import dev.sluice.testkit.Ports;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.embedded.RedisShardedCluster;

/**
 * A real three-master Redis Cluster on loopback ({@code SLUICE_REDIS_CLUSTER_URI} points the
 * tests at an external one instead), started once and stopped at exit.
 */
public final class TestCluster {
  private static List<String> seeds;
  private static StatefulRedisClusterConnection<String, String> connection;

  private TestCluster() {}

  public static synchronized List<String> seeds() {
    if (seeds != null) {
      return seeds;
    }
    String external = System.getenv("SLUICE_REDIS_CLUSTER_URI");
    if (external != null && !external.isBlank()) {
      return seeds = List.of(external.split(","));
    }
    try {
      RedisShardedCluster cluster = RedisShardedCluster.newRedisCluster()
          .serverPorts(Ports.forRedisCluster(3)).shard("a", 0).shard("b", 0).shard("c", 0)
          .initializationTimeout(Duration.ofSeconds(30)).build();
      cluster.start();
      List<Integer> ports = cluster.serverPorts();
      RedisClusterReady.await(ports, Duration.ofSeconds(30));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          cluster.stop();
        } catch (IOException ignored) {
          // the JVM is exiting
        }
      }));
      List<String> s = new ArrayList<>();
      for (int p : ports) {
        s.add("redis://127.0.0.1:" + p);
      }
      return seeds = s;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start an embedded Redis Cluster", e);
    }
  }

  static synchronized StatefulRedisClusterConnection<String, String> connection() {
    if (connection == null) {
      List<RedisURI> uris = new ArrayList<>();
      for (String s : seeds()) {
        uris.add(RedisURI.create(s));
      }
      connection = RedisClusterClient.create(uris).connect();
      connection.setTimeout(Duration.ofSeconds(10));
    }
    return connection;
  }
}

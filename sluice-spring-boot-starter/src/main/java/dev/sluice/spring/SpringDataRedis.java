package dev.sluice.spring;

import dev.sluice.redis.RedisStore;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisNode;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis store on the server Spring Data Redis is configured for (standalone, Sentinel or
 * Cluster), on a connection of Sluice's own. Loaded only when Spring Data Redis is present.
 */
final class SpringDataRedis {
  private SpringDataRedis() {}


  /** The store on the server Spring Data Redis's connection factory is configured for. */
  static RedisStores.Opened open(Object factoryBean, SluiceProperties.Redis redis, Duration timeout) {
    LettuceConnectionFactory factory = (LettuceConnectionFactory) factoryBean;
    RedisClusterConfiguration cluster = factory.getClusterConfiguration();
    if (cluster != null) {
      List<String> seeds = new ArrayList<>();
      for (RedisNode n : cluster.getClusterNodes()) {
        RedisURI.Builder u = RedisURI.builder().withHost(n.getHost()).withPort(n.getPort())
            .withSsl(factory.isUseSsl());
        credentials(u, cluster.getUsername(), cluster.getPassword().toOptional().orElse(null));
        seeds.add(u.build().toURI().toString());
      }
      RedisStore store = RedisStore.clusterBuilder(seeds.toArray(new String[0]))
          .prefix(redis.getPrefix()).commandTimeout(timeout)
          .reconnectDelayCap(redis.getReconnectDelayMax()).build();
      return new RedisStores.Opened(store, store, null);
    }
    RedisURI uri;
    RedisSentinelConfiguration sentinel = factory.getSentinelConfiguration();
    if (sentinel != null) {
      RedisURI.Builder u = RedisURI.builder();
      for (RedisNode n : sentinel.getSentinels()) {
        u.withSentinel(n.getHost(), n.getPort());
      }
      u.withSentinelMasterId(sentinel.getMaster().getName()).withDatabase(sentinel.getDatabase());
      credentials(u, sentinel.getUsername(), sentinel.getPassword().toOptional().orElse(null));
      uri = u.build();
    } else {
      RedisStandaloneConfiguration s = factory.getStandaloneConfiguration();
      RedisURI.Builder u = RedisURI.builder().withHost(s.getHostName()).withPort(s.getPort())
          .withDatabase(s.getDatabase()).withSsl(factory.isUseSsl());
      credentials(u, s.getUsername(), s.getPassword().toOptional().orElse(null));
      uri = u.build();
    }
    uri.setTimeout(timeout.compareTo(Duration.ofSeconds(2)) < 0 ? Duration.ofSeconds(2) : timeout);
    // a client of the store's own: its reconnect delay is capped, so decisions come back soon
    // after a long outage (Lettuce's default back-off grows to 30 s)
    RedisStore store = RedisStore.builder(uri).prefix(redis.getPrefix()).commandTimeout(timeout)
        .reconnectDelayCap(redis.getReconnectDelayMax()).build();
    return new RedisStores.Opened(store, store, RedisStores.quotasAt(uri));
  }

  private static void credentials(RedisURI.Builder u, String user, char[] password) {
    if (password != null && user != null) {
      u.withAuthentication(user, password);
    } else if (password != null) {
      u.withPassword(password);
    }
  }
}

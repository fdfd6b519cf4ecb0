package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.RateLimiter;
import dev.sluice.redis.TestCluster;
import dev.sluice.testkit.Ports;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import redis.embedded.RedisSentinel;
import redis.embedded.RedisServer;

/**
 * The store taken from Spring Data Redis's settings when they name a Sentinel or a Cluster: real
 * servers, exact decisions.
 */
class SpringDataRedisTopologiesTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RedisAutoConfiguration.class,
          SluiceAutoConfiguration.class))
      .withPropertyValues("sluice.policies.a.algorithm=leaky-bucket",
          "sluice.policies.a.capacity=3", "sluice.policies.a.rate=1/1h",
          "sluice.store.timeout=2s", "sluice.store.redis.prefix=topo-" + UUID.randomUUID() + ":");

  private static void exact(SluiceLimiters limiters) {
    assertThat(limiters.storeName()).isEqualTo("redis");
    RateLimiter a = limiters.get("a");
    for (String key : new String[] {"k1", "k2", "{k3}", "k4"}) {
      for (int i = 0; i < 3; i++) {
        assertThat(a.tryAcquire(key).isAllowed()).as(key + " " + i).isTrue();
      }
      assertThat(a.tryAcquire(key).isAllowed()).isFalse();
    }
    assertThat(a.stats().storeErrors()).isZero();
  }

  @Test
  void aCluster_namedBySpringDataRedis() {
    String nodes = TestCluster.seeds().stream().map(s -> s.replace("redis://", ""))
        .collect(Collectors.joining(","));
    runner.withPropertyValues("spring.data.redis.cluster.nodes=" + nodes)
        .run(context -> exact(context.getBean(SluiceLimiters.class)));
  }

  @Test
  void aSentinel_namedBySpringDataRedis() throws Exception {
    int masterPort = Ports.free();
    int sentinelPort = Ports.free();
    RedisServer master = TestStores.startRedis(masterPort);
    RedisSentinel sentinel = RedisSentinel.newRedisSentinel().bind("127.0.0.1").port(sentinelPort)
        .masterName("sluice-master").masterPort(masterPort).quorumSize(1).build();
    sentinel.start();
    try {
      runner.withPropertyValues("spring.data.redis.sentinel.master=sluice-master",
          "spring.data.redis.sentinel.nodes=127.0.0.1:" + sentinelPort)
          .run(context -> exact(context.getBean(SluiceLimiters.class)));
    } finally {
      sentinel.stop();
      master.stop();
    }
  }
}

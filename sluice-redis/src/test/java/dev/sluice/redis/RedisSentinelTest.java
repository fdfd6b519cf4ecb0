package dev.sluice.redis;

import dev.sluice.testkit.Ports;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import redis.embedded.RedisSentinel;
import redis.embedded.RedisServer;

/** A store found through a real Sentinel that monitors a real master. */
class RedisSentinelTest {

  @Test
  void redisSentinelUri_findsTheMaster() throws Exception {
    int masterPort = Ports.free();
    int sentinelPort = Ports.free();
    RedisServer master = TestRedis.startServer(masterPort);
    RedisSentinel sentinel = RedisSentinel.newRedisSentinel().bind("127.0.0.1").port(sentinelPort)
        .masterName("sluice-master").masterPort(masterPort).quorumSize(1).build();
    sentinel.start();
    try (RedisStore store = RedisStore.builder("redis-sentinel://127.0.0.1:" + sentinelPort + "#sluice-master")
        .commandTimeout(Duration.ofSeconds(2)).build()) {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perHour(2))).store(store).build();
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
      assertThat(l.tryAcquire("k").isAllowed()).isFalse();
      assertThat(l.stats().storeErrors()).isZero();
    } finally {
      sentinel.stop();
      master.stop();
    }
  }
}

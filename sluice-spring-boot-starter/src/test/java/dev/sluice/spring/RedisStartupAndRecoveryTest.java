package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.RateLimiter;
import dev.sluice.testkit.Ports;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import redis.embedded.RedisServer;

/**
 * Redis down when the application starts: a failure-analysis block naming the URI tried and what
 * the failure policy does. Redis down for a long time while it runs: decisions come back within
 * {@code sluice.store.redis.reconnect-delay-max} (250 ms) plus the breaker's {@code open-for}
 * (500 ms) of Redis answering again, whatever the outage's length.
 */
class RedisStartupAndRecoveryTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
      .withPropertyValues("sluice.store.type=redis",
          "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=1000",
          "sluice.policies.api.rate=1/1h");

  @Test
  void redisDownAtStartup_failsWithTheUriTried_andWhatThePolicyWouldDo() {
    int port = Ports.free();
    runner.withPropertyValues("sluice.store.redis.uri=redis://:secret@127.0.0.1:" + port,
        "sluice.store.failure=fallback").run(context -> {
          assertThat(context).hasFailed();
          FailureAnalysis analysis = new SluiceStoreFailureAnalyzer()
              .analyze(context.getStartupFailure());
          assertThat(analysis).isNotNull();
          assertThat(analysis.getDescription())
              .contains("Sluice could not connect to its store Redis at redis://:****@127.0.0.1:"
                  + port)
              .contains("decides in this JVM's memory (sluice.store.failure=fallback)")
              .doesNotContain("secret");
          assertThat(analysis.getAction()).contains("sluice.store.type=memory");
        });
  }

  @Test
  void aLongOutage_decisionsResumeWithinASecondOfRedisAnswering() throws Exception {
    int port = Ports.free();
    RedisServer redis = TestStores.startRedis(port);
    try {
      runner.withPropertyValues("sluice.store.redis.uri=redis://127.0.0.1:" + port,
          "sluice.store.timeout=100ms").run(context -> {
            RateLimiter api = context.getBean(SluiceLimiters.class).get("api");
            assertThat(api.tryAcquire("k").isDegraded()).isFalse();
            redis.stop();
            long outageEnds = System.nanoTime() + 12_000_000_000L;
            while (System.nanoTime() < outageEnds) {   // Lettuce's own back-off would reach 8 s+
              assertThat(api.tryAcquire("k").isDegraded()).isTrue();
              Thread.sleep(50);
            }
            RedisServer back = TestStores.startRedis(port);
            try {
              long answering = System.nanoTime();
              long resumed;
              do {
                resumed = System.nanoTime();
              } while (api.tryAcquire("k").isDegraded() && resumed - answering < 10_000_000_000L);
              double seconds = (resumed - answering) / 1e9;
              System.out.printf("starter recovery after a 12 s Redis outage: %.2f s%n", seconds);
              assertThat(seconds).as("decisions resume within 1 s of Redis answering")
                  .isLessThan(1.0);
            } finally {
              back.stop();
            }
          });
    } finally {
      if (redis.isActive()) {
        redis.stop();
      }
    }
  }
}

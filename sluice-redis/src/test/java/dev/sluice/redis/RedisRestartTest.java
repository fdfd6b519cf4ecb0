package dev.sluice.redis;

import dev.sluice.spi.DecisionStore;
import dev.sluice.testkit.Ports;
import dev.sluice.testkit.StoreRestartSuite;
import java.io.IOException;
import java.time.Duration;
import redis.embedded.RedisServer;

/**
 * A dedicated Redis (no persistence) stopped under load and restarted as a new process with an
 * empty script cache: fail closed admits nothing, no call blocks much past the 50 ms command
 * timeout, and decisions recover through EVAL.
 */
class RedisRestartTest extends StoreRestartSuite {
  private final int port = Ports.free();
  private RedisServer server;

  @Override
  protected void startServer() throws IOException {
    server = TestRedis.startServer(port);
  }

  @Override
  protected void stopServer() throws IOException {
    server.stop();
  }

  @Override
  protected DecisionStore openStore() {
    return RedisStore.builder("redis://127.0.0.1:" + port).commandTimeout(storeTimeout()).build();
  }

  @Override
  protected void closeStore(DecisionStore store) {
    ((RedisStore) store).close();
  }

  @Override
  protected Duration storeTimeout() {
    return Duration.ofMillis(50);
  }

  @Override
  protected Duration slowestAllowed() {
    return Duration.ofSeconds(1);   // the timeout plus a reconnect's scheduling on a busy host
  }

  @Override
  protected boolean keepsData() {
    return false;
  }
}

package dev.sluice.redis;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.testkit.Ports;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import redis.embedded.RedisServer;

/**
 * Real faults on a dedicated real Redis: slow past the command timeout, and never answering at
 * start. (Stopped under load and restarted: RedisRestartTest, the testkit's StoreRestartSuite.)
 */
class RedisFaultsTest {

  @Test
  void serverSlowPastTheTimeout_degradesWithinTheTimeout() throws Exception {
    int port = Ports.free();
    RedisServer server = TestRedis.startServer(port);
    RedisClient other = RedisClient.create("redis://127.0.0.1:" + port);
    try (StatefulRedisConnection<String, String> admin = other.connect();
        RedisStore store = RedisStore.builder("redis://127.0.0.1:" + port)
            .commandTimeout(Duration.ofMillis(50)).build()) {
      RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1))).store(store)
          .onStoreFailure(StoreFailure.FALLBACK_IN_MEMORY).build();
      assertThat(l.tryAcquire("k").isDegraded()).isFalse();
      // the server holds every write and script from here until it is told to go on: no race
      // with the decision below, however busy the host
      client(admin, "PAUSE", "600000", "WRITE");
      long start = System.nanoTime();
      Decision d = l.tryAcquire("k");
      long took = System.nanoTime() - start;
      client(admin, "UNPAUSE");
      assertThat(d.isDegraded()).isTrue();
      assertThat(d.isAllowed()).as("the in-process fallback has room").isTrue();
      assertThat(took).isLessThan(TimeUnit.MILLISECONDS.toNanos(500));
      assertThat(l.stats().storeErrors()).isEqualTo(1);
    } finally {
      other.shutdown();
      server.stop();
    }
  }

  /**
   * Regression (issue 11, defect 11): a server that accepts connections but never answers (here
   * stopped with SIGSTOP) blocked build() for about 61 s, against the documented connect timeout.
   */
  @Test
  void serverThatNeverAnswers_failsTheBuildWithinTheStartupTimeout() throws Exception {
    int port = Ports.free();
    RedisServer server = TestRedis.startServer(port);
    long pid;
    RedisClient probe = RedisClient.create("redis://127.0.0.1:" + port);
    try (StatefulRedisConnection<String, String> c = probe.connect()) {
      pid = Long.parseLong(c.sync().info("server").lines().filter(l -> l.startsWith("process_id:"))
          .findFirst().orElseThrow().substring(11).trim());
    } finally {
      probe.shutdown();
    }
    signal("STOP", pid);
    try {
      for (boolean cluster : new boolean[] {false, true}) {
        long start = System.nanoTime();
        RedisStore.Builder b = cluster ? RedisStore.clusterBuilder("redis://127.0.0.1:" + port)
            : RedisStore.builder("redis://127.0.0.1:" + port);
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> b.connectTimeout(Duration.ofMillis(500))
                    .startupTimeout(Duration.ofSeconds(1)).build())
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("127.0.0.1:" + port);
        assertThat(System.nanoTime() - start).as("cluster=%s: fails within the startup timeout"
            + " and one connect timeout (plus scheduling)", cluster)
            .isLessThan(TimeUnit.SECONDS.toNanos(4));
      }
    } finally {
      signal("CONT", pid);
      server.stop();
    }
  }

  /**
   * Issue 44, item 5: a host so busy (here, a link so slow) that Redis answers in 200 ms, four
   * times the decisions' 50-ms timeout: the build still succeeds on the library's defaults, since
   * loading the script has the startup timeout (10 s), not the decisions'; once answers are prompt
   * again, decisions are made. Before, the build threw and {@code sluice serve --redis} exited.
   */
  @Test
  void aHostSlowerThanTheDecisionTimeout_stillStarts() throws Exception {
    try (SlowLink slow = new SlowLink(Integer.parseInt(TestRedis.uri().replaceAll(".*:", "")),
        200)) {
      long start = System.nanoTime();
      try (RedisStore store = RedisStore.builder(slow.uri()).prefix("slow:" + System.nanoTime()
          + ":").build()) {
        long tookMillis = (System.nanoTime() - start) / 1_000_000;
        assertThat(tookMillis).as("the build waited for the slow answers").isGreaterThan(200);
        RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1)))
            .store(store).onStoreFailure(StoreFailure.FAIL_CLOSED).build();
        assertThat(l.tryAcquire("k").isDegraded()).as("200 ms > the 50-ms decision timeout")
            .isTrue();
        slow.delayMillis = 0;
        Decision d = null;
        for (int i = 0; i < 100; i++) {   // the late answer to the first decision drains first
          d = l.tryAcquire("k");
          if (!d.isDegraded()) {
            break;
          }
          Thread.sleep(10);
        }
        assertThat(d.isDegraded()).as("decisions once Redis answers in time").isFalse();
      }
    }
  }

  /**
   * Issue 44, item 5: a store built before its Redis is up waits for it (connecting again with
   * backoff within the startup timeout, and saying so at INFO), and starts once it answers.
   */
  @Test
  void aStoreBuiltBeforeItsRedis_waitsForIt_sayingWhatItWaitsFor() throws Exception {
    int port = Ports.free();
    List<String> said = new CopyOnWriteArrayList<>();
    Consumer<String> log = RedisConnection.said;
    RedisConnection.said = m -> {
      said.add(m);
      log.accept(m);
    };
    RedisServer[] server = new RedisServer[1];
    Thread late = new Thread(() -> {
      try {
        Thread.sleep(700);
        server[0] = TestRedis.startServer(port);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    late.start();
    try (RedisStore store = RedisStore.builder("redis://127.0.0.1:" + port).build()) {
      late.join();
      assertThat(store.inFlight("k")).isZero();
      assertThat(said).as("what the build waited for").isNotEmpty()
          .allMatch(m -> m.startsWith("waiting for Redis at 127.0.0.1:" + port
              + " to connect (attempt "));
    } finally {
      RedisConnection.said = log;
      late.join();
      if (server[0] != null) {
        server[0].stop();
      }
    }
  }

  /** {@code CLIENT PAUSE ms WRITE} / {@code CLIENT UNPAUSE} (Redis 6.2), answered before it returns. */
  private static void client(StatefulRedisConnection<String, String> admin, String... args) {
    CommandArgs<String, String> a = new CommandArgs<>(StringCodec.UTF8);
    for (String arg : args) {
      a.add(arg);
    }
    assertThat(admin.sync().dispatch(CommandType.CLIENT, new StatusOutput<>(StringCodec.UTF8), a))
        .isEqualTo("OK");
  }

  private static void signal(String name, long pid) throws Exception {
    Process p = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).inheritIO().start();
    assertThat(p.waitFor()).isZero();
  }
}

package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import dev.sluice.testkit.Ports;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import redis.embedded.RedisServer;

/**
 * Redis stopped and restarted under load, with {@code sluice.store.failure=closed}: while it is
 * down every limited request gets 503 with {@code Retry-After: 1} and the health is DOWN; no
 * request fails otherwise or hangs; once it is back, decisions are made again.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet", "sluice.store.failure=closed",
        "sluice.store.timeout=200ms", "spring.autoconfigure.exclude="
        + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class RedisOutageTest extends StarterContract {
  private static final int PORT = Ports.free();
  private static RedisServer redis = TestStores.startRedis(PORT);

  @DynamicPropertySource
  static void redis(DynamicPropertyRegistry r) {
    r.add("sluice.store.redis.uri", () -> "redis://127.0.0.1:" + PORT);
  }

  @AfterAll
  static void stop() throws Exception {
    redis.stop();
  }

  @Override
  String expectedStore() {
    return "redis";
  }

  @Test
  void stoppedAndRestartedUnderLoad_503WhileDown_decidedAgainOnceBack() throws Exception {
    Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
    AtomicBoolean loading = new AtomicBoolean(true);
    AtomicInteger failures = new AtomicInteger();
    Thread[] load = new Thread[4];
    for (int t = 0; t < load.length; t++) {
      load[t] = new Thread(() -> {
        while (loading.get()) {
          try {
            int s = get("/api/hello", "X-Api-Key", fresh()).statusCode();
            statuses.computeIfAbsent(s, k -> new AtomicInteger()).incrementAndGet();
          } catch (Exception e) {
            failures.incrementAndGet();
          }
        }
      });
      load[t].start();
    }
    try {
      String key = fresh();
      assertThat(get("/api/hello", "X-Api-Key", key).statusCode()).isEqualTo(200);

      redis.stop();
      HttpResponse<String> down = get("/api/hello", "X-Api-Key", key);
      assertThat(down.statusCode()).isEqualTo(503);
      assertThat(header(down, "Retry-After")).isEqualTo("1");
      assertThat(header(down, "RateLimit-Policy")).isEqualTo("\"api\";q=3;w=10800");
      assertThat(header(down, "RateLimit")).isNull();   // what is left is not known
      assertThat(down.body()).contains("Rate limiter unavailable");
      HttpResponse<String> health = get("/actuator/health/sluice");
      assertThat(health.statusCode()).isEqualTo(503);
      assertThat(health.body()).contains("\"status\":\"DOWN\"");
      // the load too must meet the outage before Redis comes back (on a busy host its requests
      // can all be in flight, waiting for the store, through a short outage)
      long seen = System.nanoTime() + 30_000_000_000L;
      while (statuses.get(503) == null && System.nanoTime() < seen) {
        LockSupport.parkNanos(1_000_000);   // polls the load's answers, leaves the CPU to it
      }

      redis = TestStores.startRedis(PORT);
      long deadline = System.nanoTime() + 30_000_000_000L;
      int status;
      do {
        status = get("/api/hello", "X-Api-Key", key).statusCode();
      } while (status != 200 && System.nanoTime() < deadline);
      assertThat(status).isEqualTo(200);
      assertThat(get("/actuator/health/sluice").statusCode()).isEqualTo(200);
    } finally {
      loading.set(false);
      for (Thread t : load) {
        t.join();
      }
    }
    assertThat(failures).hasValue(0);
    assertThat(statuses.keySet()).containsAnyOf(200).isSubsetOf(200, 503);
    assertThat(statuses.get(503)).isNotNull();
  }
}

package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.ManualClock;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import redis.embedded.RedisServer;

/** What only the Redis store has to show: keys, expiry, the script cache, connection errors. */
class RedisStoreTest {
  private final RedisCommands<String, String> redis = TestRedis.connection().sync();
  private final ManualClock clock = new ManualClock(1_000_000_000_000L);
  private final String prefix = "t:" + UUID.randomUUID() + ":";

  private RateLimiter limiter(Limit... limits) {
    return Sluice.builder().limits(limits).store(RedisFactory.store(prefix, clock)).build();
  }

  /** Every key under this test's prefix, however many other keys the server holds. */
  private List<String> keys() {
    return TestRedis.keys(prefix + "*");
  }

  @Test
  void everyKey_hasATtl_untilItIsIdle() {
    RedisStore onRedisTime = RedisStore.builder(TestRedis.connection()).prefix(prefix).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(2))).store(onRedisTime).build();
    for (int i = 0; i < 200; i++) {
      l.tryAcquire("user:" + (i % 50), 1 + i % 3);
    }
    List<String> keys = keys();
    assertThat(keys).hasSize(50);
    for (String k : keys) {
      long ttl = redis.pttl(k);
      assertThat(ttl).as(k).isPositive().isLessThanOrEqualTo(5_000);   // a full bucket drains in 5 s
      assertThat(k).startsWith(prefix + "{user:").endsWith("}");
    }
  }

  @Test
  void aDecisionThatDrainsTheKey_deletesIt() {
    RateLimiter l = limiter(Limit.fixedWindow(5, Duration.ofSeconds(1)));
    l.tryAcquire("k");
    assertThat(keys()).hasSize(1);
    l.reset("k");
    assertThat(keys()).isEmpty();
  }

  @Test
  void checksAndRejections_writeNothing() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    l.check("k");
    l.tryAcquire("k", 5);   // can never fit
    assertThat(keys()).isEmpty();
    l.tryAcquire("k");
    String before = redis.get(keys().get(0));
    clock.advance(Duration.ofSeconds(1));
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
    assertThat(redis.get(keys().get(0))).isEqualTo(before);
  }

  @Test
  void scriptCacheFlushed_recoversWithEval() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    redis.scriptFlush();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
  }

  @Test
  void limitsOfAnotherLayout_doNotReuseState_andChangedRatesNeedNoMigration() {
    limiter(Limit.leakyBucket(2, Rate.perSecond(1))).tryAcquire("k", 2);
    RateLimiter slower = limiter(Limit.leakyBucket(4, Rate.perSecond(1)));
    assertThat(slower.check("k", 2).isAllowed()).as("same layout: the level carries over").isTrue();
    assertThat(slower.check("k", 2.5).isAllowed()).isFalse();
    RateLimiter window = limiter(Limit.fixedWindow(1, Duration.ofSeconds(1)));
    assertThat(window.tryAcquire("k").isAllowed()).as("another layout starts fresh").isTrue();
  }

  @Test
  void redisTime_isUsedWithoutTheHook() {
    RedisStore store = RedisStore.builder(TestRedis.connection()).prefix(prefix).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).store(store).build();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfter()).isBetween(Duration.ofMinutes(59), Duration.ofHours(1));
  }

  /** Counts the calls that reach Redis. */
  static final class Counting implements dev.sluice.spi.DecisionStore {
    final RedisStore inner;
    final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();

    Counting(RedisStore inner) {
      this.inner = inner;
    }

    @Override
    public long ticksPerSecond() {
      return inner.ticksPerSecond();
    }

    @Override
    public dev.sluice.spi.Observation apply(String key, dev.sluice.spi.StoreRequest request) {
      calls.incrementAndGet();
      return inner.apply(key, request);
    }

    @Override
    public void reset(String key) {
      inner.reset(key);
    }
  }

  @Test
  void localDenyCache_answersRejectionsWithoutARoundTrip_untilTheRetryInstant() {
    Counting store = new Counting(RedisFactory.store(prefix, clock));
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1))).store(store)
        .clock(clock).localDenyCache(1000).build();
    l.tryAcquire("k", 2);
    Decision first = l.tryAcquire("k", 1);
    assertThat(first.isAllowed()).isFalse();
    assertThat(first.retryAfterNanos()).isEqualTo(1_000_000_000L);
    int calls = store.calls.get();
    clock.advance(Duration.ofMillis(400));
    Decision local = l.tryAcquire("k", 1);
    assertThat(local.isAllowed()).isFalse();
    assertThat(local.retryAfterNanos()).isEqualTo(600_000_000L);
    assertThat(l.tryAcquire("k", 1.5).isAllowed()).isFalse();
    assertThat(store.calls.get()).as("no round trip for costs at least as large").isEqualTo(calls);
    assertThat(l.stats().deniedLocally()).isEqualTo(2);
    assertThat(l.tryAcquire("k", 0.5).isAllowed()).as("room is 0.4").isFalse();
    assertThat(store.calls.get()).as("a smaller cost may fit: ask the store").isEqualTo(calls + 1);
    clock.advance(Duration.ofMillis(600));
    assertThat(l.tryAcquire("k", 1).isAllowed()).as("at the retry instant the store admits").isTrue();
  }

  @Test
  void timeGoingBackwards_admitsNothingExtra() {
    java.util.concurrent.atomic.AtomicLong micros = new java.util.concurrent.atomic.AtomicLong(10_000_000);
    RedisStore raw = RedisStore.builder(TestRedis.connection()).prefix(prefix)
        .timeSourceMicros(micros::get).build();   // no monotonic guard: the server's clock jumps back
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1)))
        .limit(Limit.fixedWindow(5, Duration.ofSeconds(1))).store(raw).build();
    assertThat(l.tryAcquire("k", 2).isAllowed()).isTrue();
    micros.set(4_000_000);   // six seconds back
    assertThat(l.tryAcquire("k", 0.25).isAllowed()).isFalse();
    assertThat(l.check("k", 0.25).isAllowed()).isFalse();
    micros.set(11_000_000);
    assertThat(l.tryAcquire("k", 1).isAllowed()).as("one second after the fill, one unit fits").isTrue();
    assertThat(l.tryAcquire("k", 0.25).isAllowed()).isFalse();
  }

  @Test
  void clusterMisconfiguration_failsAtBuild_namingTheServer() {
    assertThatThrownBy(() -> RedisStore.clusterBuilder("redis://127.0.0.1:1")
        .connectTimeout(Duration.ofMillis(500)).startupTimeout(Duration.ofSeconds(1)).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("127.0.0.1:1");
    String standalone = TestRedis.uri();
    assertThatThrownBy(() -> RedisStore.clusterBuilder(standalone).build())
        .as("a server without cluster support")
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(standalone.replace("redis://", ""));
    assertThatThrownBy(() -> RedisStore.clusterBuilder()).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void unreachableServer_failsAtBuild_namingIt_withoutHanging() {
    long start = System.nanoTime();
    assertThatThrownBy(() -> RedisStore.builder("redis://127.0.0.1:1")
        .connectTimeout(Duration.ofMillis(500)).startupTimeout(Duration.ofSeconds(1)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("127.0.0.1:1")
        .hasMessageContaining("to connect in the startup timeout of 1000 ms)");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    assertThatThrownBy(() -> RedisStore.builder(TestRedis.uri()).startupTimeout(Duration.ZERO))
        .hasMessage("startupTimeout must be positive but was PT0S");
    assertThatThrownBy(() -> RedisStore.builder("http://nope")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("http://nope");
    assertThatThrownBy(() -> RedisStore.builder(TestRedis.uri()).prefix("a{b"))
        .hasMessageContaining("a{b");
    assertThatThrownBy(() -> RedisStore.builder(TestRedis.uri()).commandTimeout(Duration.ZERO))
        .hasMessage("commandTimeout must be positive but was PT0S");
  }

  @Test
  void wrongPassword_failsAtBuild_namingTheServer() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    RedisServer secured = RedisServer.newRedisServer().port(port)
        .bind("127.0.0.1").setting("requirepass secret").setting("save \"\"").build();
    secured.start();
    try {
      assertThatThrownBy(() -> RedisStore.builder("redis://:wrong@127.0.0.1:" + port).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("127.0.0.1:" + port);
      RedisStore ok = RedisStore.builder("redis://:secret@127.0.0.1:" + port).build();
      ok.close();
    } finally {
      secured.stop();
    }
  }
  @Test
  void keysRedisCannotHoldFaithfully_areRefusedBeforeIt() {
    RedisStore store = RedisStore.builder(TestRedis.connection()).prefix(prefix).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perMinute(1))).store(store).build();
    // "\ud800" and "\ud801" would both reach Redis as "?" and share one bucket
    assertThatThrownBy(() -> l.tryAcquire("\ud800")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> l.tryAcquire("\ud801")).isInstanceOf(IllegalArgumentException.class);
    assertThat(l.stats().storeErrors()).isZero();
    assertThat(l.tryAcquire("\ud83d\ude00").isAllowed()).isTrue();
    assertThat(l.tryAcquire("\ud83d\ude01").isAllowed()).as("another key").isTrue();
  }
}


package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.ManualClock;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The asynchronous path: Lettuce's async commands, no thread held during a round trip. */
class RedisAsyncTest {
  private final ManualClock clock = new ManualClock(1_000_000_000_000L);

  private RateLimiter limiter(Limit limit) {
    return Sluice.builder().limit(limit).store(RedisFactory.store("a:" + UUID.randomUUID() + ":", clock))
        .clock(clock).scheduler(clock).build();
  }

  @Test
  void tryAcquireAsync_decidesAsTheSyncPathDoes() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(1)));
    assertThat(l.tryAcquireAsync("k", 2).get(5, TimeUnit.SECONDS).isAllowed()).isTrue();
    Decision d = l.tryAcquireAsync("k", 2).get(5, TimeUnit.SECONDS);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(1_000_000_000L);
    assertThat(l.check("k", 1).remaining()).isEqualTo(1.0);
  }

  @Test
  void tryAcquireAsync_recoversFromAnEmptyScriptCache() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(1)));
    TestRedis.connection().sync().scriptFlush();
    assertThat(l.tryAcquireAsync("k", 1).get(5, TimeUnit.SECONDS).isAllowed()).isTrue();
    assertThat(l.stats().storeErrors()).isZero();
  }

  @Test
  void acquireAsync_waitsOnTheScheduler_thenAdmits() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(2)));
    l.tryAcquire("job");
    CompletableFuture<Decision> f = l.acquireAsync("job", 1, Duration.ofSeconds(1));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (clock.pendingTasks() == 0 && System.nanoTime() < deadline) {
      Thread.onSpinWait();   // the rejection arrives on a Lettuce thread, which schedules the retry
    }
    assertThat(clock.pendingTasks()).isEqualTo(1);
    assertThat(f).isNotDone();
    clock.advance(Duration.ofMillis(500));
    assertThat(f.get(5, TimeUnit.SECONDS).isAllowed()).isTrue();
  }
}

package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Issue 12: user callbacks are guarded as Caffeine guards its scheduler. A scheduler that throws
 * fails that one acquireAsync with an error naming it (it once left the future pending forever,
 * the exception lost on whichever thread completed the decision).
 */
class UserCallbacksTest {
  @Test
  void throwingScheduler_failsThatOneCall_withAnErrorNamingIt() throws Exception {
    EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();
    Scheduler broken = new Scheduler() {
      @Override
      public void schedule(Runnable task, long delayNanos) {
        throw new RejectedExecutionException("queue full");
      }

      @Override
      public String toString() {
        return "broken scheduler";
      }
    };
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1)))
        .clock(clock).scheduler(broken).build();
    l.tryAcquire("job");
    CompletableFuture<Decision> f = l.acquireAsync("job", 1, Duration.ofSeconds(5));
    assertThat(f).isCompletedExceptionally();
    try {
      f.get();
    } catch (ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("acquireAsync(job) could not wait for its retry")
          .hasMessageContaining("broken scheduler")
          .hasCauseInstanceOf(RejectedExecutionException.class);
    }
    // the limiter itself is unharmed, and the failed wait charged nothing
    assertThat(l.acquireAsync("other", 1, Duration.ZERO).get().isAllowed()).isTrue();
    clock.now.addAndGet(1_000_000_000L);
    assertThat(l.tryAcquire("job").isAllowed()).isTrue();
  }
}

package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The retry budget on a manual clock: retries up to the ratio of successes plus the floor over
 * the window, and no more, whatever fails; counts age out with the window; exact under threads.
 */
class RetryBudgetTest {
  private final TestTime clock = new TestTime();

  @Test
  void retries_areCappedAtTheRatioOfSuccesses_plusTheFloor() {
    RetryBudget b = RetryBudget.builder().ratio(0.1).minPerSecond(1).window(Duration.ofSeconds(10))
        .clock(clock).build();
    for (int i = 0; i < 1000; i++) {
      b.success();
    }
    int allowed = 0;
    for (int i = 0; i < 1000; i++) {   // a storm: every call fails and wants a retry
      allowed += b.tryRetry() ? 1 : 0;
    }
    assertThat(allowed).as("0.1 x 1000 successes + 1/s x 10 s").isEqualTo(110);
    assertThat(b.retriesAllowed()).isEqualTo(110);
    assertThat(b.retriesRefused()).isEqualTo(890);
    assertThat(b.available()).isZero();
  }

  @Test
  void withNoSuccess_onlyTheFloor() {
    RetryBudget b = RetryBudget.builder().ratio(0.5).minPerSecond(2).window(Duration.ofSeconds(5))
        .clock(clock).build();
    int allowed = 0;
    for (int i = 0; i < 100; i++) {
      allowed += b.tryRetry() ? 1 : 0;
    }
    assertThat(allowed).as("2/s x 5 s").isEqualTo(10);
  }

  @Test
  void countsAgeOut_withTheWindow() {
    RetryBudget b = RetryBudget.builder().ratio(1).minPerSecond(0).window(Duration.ofSeconds(10))
        .clock(clock).build();
    for (int i = 0; i < 20; i++) {
      b.success();
    }
    assertThat(b.available()).isEqualTo(20);
    for (int i = 0; i < 20; i++) {
      assertThat(b.tryRetry()).isTrue();
    }
    assertThat(b.tryRetry()).isFalse();
    clock.advance(Duration.ofSeconds(10).toNanos());   // the successes and retries are out of the window
    assertThat(b.available()).isZero();
    assertThat(b.tryRetry()).as("no success in the window, no floor").isFalse();
    b.success();
    assertThat(b.tryRetry()).isTrue();
    clock.advance(Duration.ofSeconds(5).toNanos());
    b.success();
    b.success();
    assertThat(b.available()).as("three successes in the window, one retry").isEqualTo(2);
  }

  @Test
  void manyThreads_neverExceedTheBudget() throws Exception {
    RetryBudget b = RetryBudget.builder().ratio(0.2).minPerSecond(0).window(Duration.ofSeconds(10))
        .clock(clock).build();
    for (int i = 0; i < 5000; i++) {
      b.success();
    }
    AtomicLong allowed = new AtomicLong();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      Thread th = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < 1000; i++) {
          if (b.tryRetry()) {
            allowed.incrementAndGet();
          }
        }
      });
      th.start();
      threads.add(th);
    }
    go.countDown();
    for (Thread th : threads) {
      th.join();
    }
    assertThat(allowed.get()).as("exactly 0.2 x 5000").isEqualTo(1000);
    assertThat(b.retriesAllowed() + b.retriesRefused()).isEqualTo(16_000);
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> RetryBudget.builder().ratio(-1))
        .hasMessage("ratio must be between 0 and 10 but was -1.0");
    assertThatThrownBy(() -> RetryBudget.builder().minPerSecond(Double.NaN))
        .hasMessage("minPerSecond must be between 0 and 1000000 but was NaN");
    assertThatThrownBy(() -> RetryBudget.builder().window(Duration.ofMillis(10)))
        .hasMessage("window must be between 1 s and 1 hour but was PT0.01S");
  }
}

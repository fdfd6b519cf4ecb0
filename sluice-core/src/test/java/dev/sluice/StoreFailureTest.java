package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The failure policies and the circuit breaker of store-backed limiters. */
class StoreFailureTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();

  /** A store that answers "empty bucket" while up and throws while down. */
  static final class FlakyStore implements DecisionStore {
    volatile boolean down;
    final AtomicInteger calls = new AtomicInteger();

    @Override
    public long ticksPerSecond() {
      return 1_000_000;
    }

    @Override
    public Observation apply(String key, StoreRequest request) {
      calls.incrementAndGet();
      if (down) {
        throw new IllegalStateException("store is down");
      }
      return new Observation(5_000_000, request.initialState());
    }

    @Override
    public void reset(String key) {}
  }

  private RateLimiter limiter(FlakyStore store, StoreFailure policy) {
    return Sluice.builder().limit(Limit.leakyBucket(2, Rate.perSecond(1))).store(store).clock(clock)
        .onStoreFailure(policy).circuitBreaker(3, Duration.ofSeconds(1)).build();
  }

  @Test
  void failClosed_rejectsAndCounts() {
    FlakyStore store = new FlakyStore();
    RateLimiter l = limiter(store, StoreFailure.FAIL_CLOSED);
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    store.down = true;
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isDegraded()).isTrue();
    assertThat(d.retryAfterNanos()).isGreaterThanOrEqualTo(1_000_000_000L);
    assertThat(l.stats().storeErrors()).isEqualTo(1);
    assertThat(l.stats().degradedDecisions()).isEqualTo(1);
  }

  @Test
  void failOpen_admits() {
    FlakyStore store = new FlakyStore();
    store.down = true;
    Decision d = limiter(store, StoreFailure.FAIL_OPEN).tryAcquire("k", 2);
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.isDegraded()).isTrue();
  }

  @Test
  void fallback_decidesInProcessWithTheSameLimits() {
    FlakyStore store = new FlakyStore();
    store.down = true;
    RateLimiter l = limiter(store, StoreFailure.FALLBACK_IN_MEMORY);
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isDegraded()).isTrue();
    assertThat(d.retryAfterNanos()).isEqualTo(1_000_000_000L);
  }

  @Test
  void breaker_opensAfterConsecutiveFailures_thenTriesOnce() {
    FlakyStore store = new FlakyStore();
    RateLimiter l = limiter(store, StoreFailure.FAIL_CLOSED);
    store.down = true;
    for (int i = 0; i < 3; i++) {
      l.tryAcquire("k");
    }
    assertThat(store.calls.get()).isEqualTo(3);
    assertThat(l.stats().breakerOpen()).isTrue();
    for (int i = 0; i < 100; i++) {
      assertThat(l.tryAcquire("k").isDegraded()).isTrue();
    }
    assertThat(store.calls.get()).as("open: the store is not called").isEqualTo(3);
    clock.now.addAndGet(Duration.ofSeconds(1).toNanos());
    l.tryAcquire("k");
    l.tryAcquire("k");
    assertThat(store.calls.get()).as("one trial after the open period").isEqualTo(4);
    store.down = false;
    clock.now.addAndGet(Duration.ofSeconds(1).toNanos());
    assertThat(l.tryAcquire("k").isDegraded()).as("the trial succeeds and closes it").isFalse();
    assertThat(l.stats().breakerOpen()).isFalse();
    assertThat(l.tryAcquire("k").isDegraded()).isFalse();
    assertThat(l.stats().degradedDecisions()).as("3 failures, 100 while open, the failed trial and one more").isEqualTo(105);
  }

  @Test
  void keysAStoreCannotHold_areTheCallersError_neverAStoreFailure() {
    FlakyStore store = new FlakyStore();
    RateLimiter l = limiter(store, StoreFailure.FAIL_CLOSED);
    String nul = "a\u0000b";
    String lone = "x\ud800y";
    String tooLong = "é".repeat(513);                          // 1,026 bytes of UTF-8
    for (String key : new String[] {nul, lone, tooLong}) {
      for (int i = 0; i < 5; i++) {                            // more than the breaker's 3
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.tryAcquire(key))
            .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("key must");
      }
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.check(key))
          .isInstanceOf(IllegalArgumentException.class);
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.tryAcquireAsync(key, 1))
          .isInstanceOf(IllegalArgumentException.class);
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.reset(key))
          .isInstanceOf(IllegalArgumentException.class);
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.tryAcquire(nul))
        .hasMessage("key must not contain U+0000 but was \"a\\u0000b\"");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.tryAcquire(lone))
        .hasMessageContaining("lone surrogate at index 1");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> l.tryAcquire(tooLong))
        .hasMessageContaining("at most 1024 bytes of UTF-8 for a shared store but was 1026 bytes");
    assertThat(store.calls.get()).as("the store never saw them").isZero();
    assertThat(l.stats().storeErrors()).isZero();
    // the limit is exact: 1,024 bytes pass, and pairs of surrogates (4 bytes each) are fine
    assertThat(l.tryAcquire("é".repeat(512)).isDegraded()).isFalse();
    assertThat(l.tryAcquire("\ud83d\ude00".repeat(256)).isDegraded()).isFalse();
    assertThat(store.calls.get()).isEqualTo(2);
  }
}


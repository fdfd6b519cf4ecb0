package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.StoreFailure;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * A concurrency limiter on a store that fails: each failure policy, the breaker shared with the
 * rate side, releases lost to an outage, and the builder's refusals of bad settings.
 */
class StorePermitFailureTest {
  private final ManualClock clock = new ManualClock(1_000_000_000_000L);
  private final ReferencePermitStore store = new ReferencePermitStore(clock);

  private ConcurrencyLimiter.Builder builder() {
    return ConcurrencyLimiter.builder().limit(2).store(store).clock(clock).scheduler(clock)
        .lease(Duration.ofSeconds(1))
        .circuitBreaker(CircuitBreakerSettings.defaults().withConsecutiveUnavailable(3)
            .withOpenFor(Duration.ofSeconds(5)));
  }

  @Test
  void failClosed_refusesAsStoreUnavailable_andTheOpenBreakerSparesTheStore() {
    ConcurrencyLimiter l = builder().build();
    store.failing(true);
    for (int i = 0; i < 3; i++) {
      Acquisition a = l.tryAcquire("k");
      assertThat(a.refusal()).isEqualTo(Refusal.STORE_UNAVAILABLE);
      assertThat(a.isDegraded()).isTrue();
    }
    long calls = store.calls();
    for (int i = 0; i < 100; i++) {
      assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.STORE_UNAVAILABLE);
    }
    assertThat(store.calls()).as("the breaker is open: no call reaches the store").isEqualTo(calls);
    store.failing(false);
    clock.advance(Duration.ofSeconds(5));   // the trial goes through and closes the breaker
    Acquisition back = l.tryAcquire("k");
    assertThat(back.isAcquired()).isTrue();
    assertThat(back.isDegraded()).isFalse();
    assertThat(store.inFlight("k")).isEqualTo(1);
  }

  @Test
  void failOpen_grantsPermitsThatCountNowhere_andTellsTheirEnd() {
    List<PermitEnd> ends = new CopyOnWriteArrayList<>();
    ConcurrencyLimiter l = builder().onStoreFailure(StoreFailure.FAIL_OPEN)
        .onPermitEnd(ends::add).build();
    store.failing(true);
    for (int i = 0; i < 5; i++) {   // past the limit of 2: nothing counts them
      Acquisition a = l.tryAcquire("k");
      assertThat(a.isAcquired()).isTrue();
      assertThat(a.isDegraded()).isTrue();
      assertThat(a.permit().release(Outcome.DROPPED)).isTrue();
    }
    assertThat(ends).hasSize(5).allMatch(e -> e.outcome() == Outcome.DROPPED);
    store.failing(false);
    assertThat(store.inFlight("k")).isZero();
  }

  @Test
  void fallbackInMemory_holdsTheLimitInThisJvm_untilTheStoreIsBack() {
    ConcurrencyLimiter l = builder().onStoreFailure(StoreFailure.FALLBACK_IN_MEMORY).build();
    store.failing(true);
    Acquisition one = l.tryAcquire("k");
    Acquisition two = l.tryAcquire("k");
    Acquisition three = l.tryAcquire("k");
    assertThat(one.isAcquired()).isTrue();
    assertThat(two.isAcquired()).isTrue();
    assertThat(three.refusal()).isEqualTo(Refusal.FULL);
    assertThat(List.of(one, two, three)).allMatch(Acquisition::isDegraded);
    one.permit().close();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();   // the fallback's count came back
    store.failing(false);
    clock.advance(Duration.ofSeconds(5));
    Acquisition shared = l.tryAcquire("k");
    assertThat(shared.isDegraded()).isFalse();
    assertThat(store.inFlight("k")).isEqualTo(1);
  }

  /**
   * A release lost to an outage is given back as soon as the store answers again (the limiter
   * cancels it, retrying from 25 ms on), not a lease later; a store that never answers within the
   * lease lets it go when the lease ends.
   */
  @Test
  void aReleaseLostToAnOutage_isGivenBackWhenTheStoreAnswers() throws Exception {
    ConcurrencyLimiter l = builder().circuitBreaker(CircuitBreakerSettings.defaults()
        .withConsecutiveUnavailable(100)).build();
    Permit p = l.tryAcquire("k").permit();
    l.tryAcquire("k").permit();
    store.failing(true);
    assertThat(p.release(Outcome.SUCCESS)).as("ended here, whatever the store").isTrue();
    store.failing(false);
    assertThat(store.inFlight("k")).as("the release did not reach the store").isEqualTo(2);
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (clock.pendingTasks() == 0 && System.nanoTime() < end) {
      Thread.sleep(1);   // the failed cancel schedules its retry on another thread
    }
    clock.advance(Duration.ofMillis(25));   // the cancel's first retry
    while (store.inFlight("k") != 1 && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertThat(store.inFlight("k")).as("given back once the store answered").isEqualTo(1);
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
  }

  /** The same release, with the store down for longer than the lease: the lease returns it. */
  @Test
  void aReleaseLostToALongOutage_costsAtMostOneLease() {
    ConcurrencyLimiter l = builder().circuitBreaker(CircuitBreakerSettings.defaults()
        .withConsecutiveUnavailable(100)).build();
    Permit p = l.tryAcquire("k").permit();
    l.tryAcquire("k").permit();
    store.failing(true);
    assertThat(p.release(Outcome.SUCCESS)).isTrue();
    for (int i = 0; i < 20; i++) {
      clock.advance(Duration.ofMillis(50));   // every retry fails, for the lease of 1 s
    }
    store.failing(false);
    assertThat(store.inFlight("k")).as("both leases have ended").isZero();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
  }

  @Test
  void aWaiter_whenTheStoreFails_getsThePolicysAnswer() throws Exception {
    ConcurrencyLimiter l = builder().limit(1).build();
    l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = l.acquireAsync("k", 1, Duration.ofSeconds(5));
    awaitWaiting(l, 1);
    store.failing(true);
    Acquisition a = pollUntilDone(waiting);   // its next poll fails
    assertThat(a.refusal()).isEqualTo(Refusal.STORE_UNAVAILABLE);
    assertThat(a.isDegraded()).isTrue();
    assertThat(l.waiting("k")).isZero();
  }

  /** Advances the clock a poll interval at a time until the future completes (answers come on another thread). */
  private Acquisition pollUntilDone(CompletableFuture<Acquisition> f) throws Exception {
    for (int i = 0; i < 500 && !f.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
      try {
        f.get(20, TimeUnit.MILLISECONDS);
      } catch (TimeoutException notYet) {
        // the next poll
      }
    }
    return f.get(10, TimeUnit.SECONDS);
  }

  private static void awaitWaiting(ConcurrencyLimiter l, int n) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (l.waiting("k") < n && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertThat(l.waiting("k")).isEqualTo(n);
  }

  @Test
  void aFullQueue_refusesTheLowestPrioritysOldestWaiter_toSeatAHigherOne() throws Exception {
    for (boolean onStore : new boolean[] {false, true}) {
      ConcurrencyLimiter.Builder b = ConcurrencyLimiter.builder().limit(1).maxWaiters(2)
          .clock(clock).scheduler(clock);
      if (onStore) {
        b.store(new ReferencePermitStore(clock));
      }
      ConcurrencyLimiter l = b.build();
      l.tryAcquire("k").permit();
      CompletableFuture<Acquisition> old = l.acquireAsync("k", 1, Priority.SHEDDABLE,
          Duration.ofSeconds(5));
      awaitWaiting(l, 1);   // on a store, a refused first ask joins the queue on another thread
      CompletableFuture<Acquisition> young = l.acquireAsync("k", 1, Priority.SHEDDABLE,
          Duration.ofSeconds(5));
      awaitWaiting(l, 2);
      CompletableFuture<Acquisition> sameLevel = l.acquireAsync("k", 1, Priority.SHEDDABLE,
          Duration.ofSeconds(5));
      assertThat(sameLevel.get(10, TimeUnit.SECONDS).refusal()).as("FIFO: the newcomer goes")
          .isEqualTo(Refusal.QUEUE_FULL);
      CompletableFuture<Acquisition> critical = l.acquireAsync("k", 1, Priority.CRITICAL,
          Duration.ofSeconds(5));
      assertThat(old.get(10, TimeUnit.SECONDS).refusal()).isEqualTo(Refusal.QUEUE_FULL);
      assertThat(young).isNotDone();
      assertThat(critical).isNotDone();
      assertThat(l.waiting("k")).isEqualTo(2);
      l.close();
    }
  }

  @Test
  void badSettings_areRefused_namingTheValue() {
    ConcurrencyLimiter.Builder b = ConcurrencyLimiter.builder().limit(3);
    assertThatThrownBy(() -> b.share(Priority.SHEDDABLE, 1.5))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SHEDDABLE")
        .hasMessageContaining("1.5");
    assertThatThrownBy(() -> b.share(Priority.NORMAL, Double.NaN))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NaN");
    assertThatThrownBy(() -> ConcurrencyLimiter.builder().limit(3).share(Priority.NORMAL, 0.5)
        .share(Priority.SHEDDABLE, 0.9).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("SHEDDABLE (0.9)")
        .hasMessageContaining("NORMAL (0.5)");
    assertThatThrownBy(() -> b.onStoreFailure(StoreFailure.LOCAL_SHARE))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("LOCAL_SHARE");
    assertThatThrownBy(() -> b.pollInterval(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(3).store(store).build();
    assertThatThrownBy(() -> l.tryAcquire("k", 1, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("priority");
    assertThatThrownBy(() -> l.tryAcquire("a\u0000b"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("U+0000");
    assertThat(l.tryAcquire("k", 1, Priority.SHEDDABLE).isAcquired()).isTrue();
  }

  /** A share of 0 sheds that priority at once; weights past a share are shed without waiting. */
  @Test
  void aShareOfZero_shedsAtOnce() throws Exception {
    ConcurrencyLimiter l = builder().limit(4).share(Priority.SHEDDABLE, 0).build();
    assertThat(l.tryAcquire("k", 1, Priority.SHEDDABLE).refusal()).isEqualTo(Refusal.SHED);
    assertThat(l.acquireAsync("k", 1, Priority.SHEDDABLE, Duration.ofSeconds(1))
        .get(10, TimeUnit.SECONDS).refusal()).isEqualTo(Refusal.SHED);
    assertThat(l.tryAcquire("k", 4, Priority.NORMAL).isAcquired()).isTrue();
  }

  /**
   * releaseAsync ends the permit at once and does not wait for the store: a store whose release
   * is slow leaves the future open until it answers, and a second release says false at once.
   */
  @Test
  void releaseAsync_doesNotWaitForTheStore() throws Exception {
    CountDownLatch storeAnswers = new CountDownLatch(1);
    PermitStore slowRelease = new ForwardingPermitStore(store) {
      @Override
      public CompletableFuture<PermitReply> releaseAsync(String key, String id, int weight) {
        return CompletableFuture.supplyAsync(() -> {
          try {
            storeAnswers.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return store.release(key, id, weight);
        });
      }
    };
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(1).store(slowRelease).clock(clock)
        .scheduler(clock).build();
    Permit p = l.tryAcquire("k").permit();
    CompletableFuture<Boolean> released = p.releaseAsync(Outcome.SUCCESS);
    assertThat(p.isActive()).as("ended here at once").isFalse();
    assertThat(released).as("the store has not answered").isNotDone();
    assertThat(p.releaseAsync(Outcome.SUCCESS).get(1, TimeUnit.SECONDS)).isFalse();
    storeAnswers.countDown();
    assertThat(released.get(10, TimeUnit.SECONDS)).isTrue();
    assertThat(l.inFlight("k")).isZero();
    Permit inMemory = ConcurrencyLimiter.builder().limit(1).build().tryAcquire("k").permit();
    assertThat(inMemory.releaseAsync(Outcome.DROPPED).get(1, TimeUnit.SECONDS)).isTrue();
  }
}

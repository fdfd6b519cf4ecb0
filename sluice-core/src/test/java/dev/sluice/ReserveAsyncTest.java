package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The queue decided without blocking: {@code reserveAsync} on a shared store and in memory. */
class ReserveAsyncTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();
  private final Limit bucket = Limit.leakyBucket(3, Rate.perSecond(2));

  @Test
  void onAStore_decidesAsReserveDoes_onTheStoresAsynchronousCall() {
    InProcessStore store = new InProcessStore(List.of(bucket), clock);
    InProcessStore twinStore = new InProcessStore(List.of(bucket), clock);
    RateLimiter async = Sluice.builder().limit(bucket).store(store).clock(clock).build();
    RateLimiter sync = Sluice.builder().limit(bucket).store(twinStore).clock(clock).build();
    double[] costs = {1, 0.5, 1.5, 1, 2, 0.25, 3, 1};
    int queued = 0;
    int refused = 0;
    for (double c : costs) {
      store.holdAsync = true;
      CompletableFuture<Decision> f = async.reserveAsync("k", c);
      assertThat(f).isNotDone();                    // waiting for the store, on no thread
      assertThat(store.runHeld()).isEqualTo(1);
      Decision a = f.join();
      Decision s = sync.reserve("k", c);
      assertThat(a.isAllowed()).isEqualTo(s.isAllowed());
      assertThat(a.delayNanos()).isEqualTo(s.delayNanos());
      assertThat(a.remaining()).isEqualTo(s.remaining());
      queued += a.isAllowed() && a.delayNanos() > 0 ? 1 : 0;
      refused += a.isAllowed() ? 0 : 1;
      clock.now.addAndGet(300_000_000L);
    }
    assertThat(queued).isPositive();   // the sequence both waits and overflows
    assertThat(refused).isPositive();
  }

  @Test
  void onAStoreThatIsDown_theFailurePolicyAnswers() {
    InProcessStore store = new InProcessStore(List.of(bucket), clock);
    store.down = true;
    RateLimiter closed = Sluice.builder().limit(bucket).store(store).clock(clock).build();
    Decision d = closed.reserveAsync("k", 1).join();
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isDegraded()).isTrue();
    RateLimiter fallback = Sluice.builder().limit(bucket).store(store).clock(clock)
        .onStoreFailure(StoreFailure.FALLBACK_IN_MEMORY).build();
    Decision f = fallback.reserveAsync("k", 1).join();
    assertThat(f.isAllowed()).isTrue();
    assertThat(f.isDegraded()).isTrue();
    assertThat(closed.stats().storeErrors()).isEqualTo(1);
  }

  @Test
  void inMemory_isImmediate_andWindowsCannotQueue() {
    RateLimiter memory = Sluice.builder().limit(bucket).clock(clock).build();
    CompletableFuture<Decision> first = memory.reserveAsync("k", 1);
    assertThat(first).isDone();
    assertThat(first.join().delayNanos()).isZero();
    assertThat(memory.reserveAsync("k", 1).join().delayNanos()).isEqualTo(500_000_000L);   // behind 1 at 2/s
    assertThat(memory.reserveAsync("k", 1.5).join().isAllowed()).isFalse();                // 2 + 1.5 > 3
    RateLimiter windows = Sluice.builder().limit(Limit.fixedWindow(5, Duration.ofSeconds(1)))
        .store(new InProcessStore(List.of(Limit.fixedWindow(5, Duration.ofSeconds(1))), clock))
        .clock(clock).build();
    assertThatThrownBy(() -> windows.reserveAsync("k", 1))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> memory.reserveAsync("", 1)).isInstanceOf(IllegalArgumentException.class);
  }
}

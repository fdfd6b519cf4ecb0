package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Refusal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Adaptive limits on a shared store: each instance learns from its own permits and sends its own
 * limit as the ceiling of the shared count (docs/concurrency.md says why).
 */
class StoreAdaptiveLimitTest {
  private final ManualClock clock = new ManualClock(1_000_000_000_000L);
  private final ReferencePermitStore store = new ReferencePermitStore(clock);

  /** A limit moved by hand, recording what it is told. */
  private static final class Dial implements AdaptiveLimit {
    volatile int limit;
    final List<PermitEnd> told = new CopyOnWriteArrayList<>();

    Dial(int limit) {
      this.limit = limit;
    }

    @Override
    public int limit() {
      return limit;
    }

    @Override
    public void onEnd(PermitEnd end, long nowNanos) {
      told.add(end);
    }
  }

  private ConcurrencyLimiter instance(Dial dial) {
    return ConcurrencyLimiter.builder().adaptive(() -> dial).store(store).clock(clock)
        .scheduler(clock).pollInterval(Duration.ofMillis(10)).build();
  }

  @Test
  void eachInstanceSendsItsOwnLimit_andLearnsFromItsOwnPermits() throws Exception {
    Dial wide = new Dial(3);
    Dial narrow = new Dial(1);
    ConcurrencyLimiter a = instance(wide);
    ConcurrencyLimiter b = instance(narrow);
    Permit first = a.tryAcquire("db").permit();
    Acquisition refused = b.tryAcquire("db");
    assertThat(refused.refusal()).as("b's limit is 1 and the shared count is 1")
        .isEqualTo(Refusal.FULL);
    assertThat(refused.limit()).isEqualTo(1);
    Permit second = a.tryAcquire("db").permit();
    Permit third = a.tryAcquire("db").permit();
    assertThat(a.tryAcquire("db").refusal()).isEqualTo(Refusal.FULL);
    assertThat(store.inFlight("db")).isEqualTo(3);
    first.release(Outcome.DROPPED);
    assertThat(wide.told).extracting(PermitEnd::outcome).containsExactly(Outcome.DROPPED);
    assertThat(wide.told.get(0).inFlight()).as("the store's count when it was taken")
        .isEqualTo(1);
    assertThat(narrow.told).as("b learns only from its own permits").isEmpty();
    CompletableFuture<Acquisition> waiting = b.acquireAsync("db", 1, Duration.ofSeconds(5));
    narrow.limit = 4;   // b's limit grows while it waits: its next ask sends the new ceiling
    for (int i = 0; i < 200 && !waiting.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
      Thread.sleep(1);
    }
    assertThat(waiting.get(10, TimeUnit.SECONDS).isAcquired()).isTrue();
    assertThat(store.inFlight("db")).isEqualTo(3);
    second.close();
    third.close();
    a.close();
    b.close();
  }
}

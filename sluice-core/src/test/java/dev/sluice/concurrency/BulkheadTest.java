package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BulkheadTest {
  private final TestTime time = new TestTime();

  @Test
  void atMostTheLimitHeld_andAPermitIsReleasedExactlyOnce() {
    Bulkhead b = Bulkhead.builder(2).clock(time).build();
    long one = b.tryAcquire();
    long two = b.tryAcquire();
    assertThat(one).isNotNegative();
    assertThat(two).isNotNegative().isNotEqualTo(one);
    assertThat(b.tryAcquire()).isEqualTo(Bulkhead.NO_PERMIT);
    assertThat(b.inFlight()).isEqualTo(2);
    assertThat(b.release(one)).isTrue();
    assertThat(b.release(one)).as("a second release").isFalse();
    assertThat(b.inFlight()).isEqualTo(1);
    long three = b.tryAcquire();
    assertThat(three).as("the slot again, a new generation").isNotNegative().isNotEqualTo(one);
    assertThat(b.release(one)).as("the old handle does not release the new permit").isFalse();
    assertThat(b.release(Bulkhead.NO_PERMIT)).isFalse();
    assertThat(b.release(Long.MAX_VALUE)).as("no such slot").isFalse();
    assertThat(b.release(three)).isTrue();
    assertThat(b.release(two)).isTrue();
    assertThat(b.inFlight()).isZero();
    assertThat(b.acquired()).isEqualTo(3);
    assertThat(b).hasToString("Bulkhead[0 of 2 in flight]");
  }

  /**
   * A release is one plain write, not a compare-and-set: threads racing to release one handle
   * may each be answered true, but the slot comes back once, never twice (an independent count:
   * exactly one more permit can be taken afterwards), over many rounds.
   */
  @Test
  void racingReleasesOfOneHandle_giveItsSlotBackOnce() throws Exception {
    Bulkhead b = Bulkhead.builder(4).clock(time).build();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      for (int round = 0; round < 2_000; round++) {
        long[] held = new long[4];
        for (int i = 0; i < 4; i++) {
          held[i] = b.tryAcquire();
          assertThat(held[i]).isNotNegative();
        }
        long h = held[round % 4];
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Boolean>> racers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
          racers.add(pool.submit(() -> {
            go.await();
            return b.release(h);
          }));
        }
        go.countDown();
        int trues = 0;
        for (Future<Boolean> f : racers) {
          trues += f.get(10, TimeUnit.SECONDS) ? 1 : 0;
        }
        assertThat(trues).as("round %d: at least the first release is answered true", round)
            .isBetween(1, 4);
        assertThat(b.inFlight()).as("round %d", round).isEqualTo(3);
        long again = b.tryAcquire();
        assertThat(again).as("round %d: the slot, once", round).isNotNegative();
        assertThat(b.tryAcquire()).as("round %d: and not twice", round)
            .isEqualTo(Bulkhead.NO_PERMIT);
        for (int i = 0; i < 4; i++) {
          if (held[i] != h) {
            assertThat(b.release(held[i])).isTrue();
          }
        }
        assertThat(b.release(again)).isTrue();
        assertThat(b.inFlight()).isZero();
      }
      assertThat(b.acquired()).isEqualTo(2_000 * 5);
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Forgotten permits come back a lease after the bulkhead is first found full with them: the
   * first full acquisition marks them, the first look at the slots a lease later takes them back
   * (the slots are looked at once an eighth of a lease, 1.25 s here); their handles then release
   * nothing.
   */
  @Test
  void forgottenPermits_comeBackALeaseAfterTheBulkheadIsFoundFull() {
    Bulkhead b = Bulkhead.builder(2).lease(Duration.ofSeconds(10)).clock(time).build();
    long lost1 = b.tryAcquire();
    long lost2 = b.tryAcquire();
    time.advance(Duration.ofMinutes(5).toNanos());   // room was never needed: no lease running
    assertThat(b.tryAcquire()).as("full: the held permits are marked").isEqualTo(Bulkhead.NO_PERMIT);
    time.advance(Duration.ofMillis(8_750).toNanos());
    assertThat(b.tryAcquire()).as("looked at, 8.75 s held").isEqualTo(Bulkhead.NO_PERMIT);
    time.advance(Duration.ofMillis(1_250).toNanos() - 1);
    assertThat(b.tryAcquire()).as("not looked at again yet").isEqualTo(Bulkhead.NO_PERMIT);
    time.advance(1);
    long back = b.tryAcquire();
    assertThat(back).as("a lease after they were found").isNotNegative();
    assertThat(b.expired()).isEqualTo(2);
    assertThat(b.release(lost1)).isFalse();
    assertThat(b.release(lost2)).isFalse();
    assertThat(b.inFlight()).isEqualTo(1);
    assertThat(b.release(back)).isTrue();
    assertThat(b.acquired()).isEqualTo(3);
  }

  /** A permit released between two full acquisitions is not taken for a lost one. */
  @Test
  void aSlotReleasedAndTakenAgain_startsItsLeaseAfresh() {
    Bulkhead b = Bulkhead.builder(1).lease(Duration.ofSeconds(10)).clock(time).build();
    long first = b.tryAcquire();
    assertThat(b.tryAcquire()).isEqualTo(Bulkhead.NO_PERMIT);   // marks first's generation
    assertThat(b.release(first)).isTrue();
    long second = b.tryAcquire();
    time.advance(Duration.ofSeconds(10).toNanos());
    assertThat(b.tryAcquire()).as("second was only now found held").isEqualTo(Bulkhead.NO_PERMIT);
    time.advance(Duration.ofSeconds(9).toNanos());
    assertThat(b.tryAcquire()).as("9 s since it was found").isEqualTo(Bulkhead.NO_PERMIT);
    assertThat(b.release(second)).isTrue();
    assertThat(b.expired()).isZero();
  }

  /**
   * Sixteen threads on a limit of 5: an independent counter, raised after each acquisition and
   * lowered before its release, never passes 5; every permit taken is released exactly once, and
   * the generations count every acquisition.
   */
  @Test
  void manyThreads_neverMoreThanTheLimit_andExactAccounting() throws Exception {
    Bulkhead b = Bulkhead.builder(5).build();
    AtomicInteger held = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicLong taken = new AtomicLong();
    AtomicLong released = new AtomicLong();
    int threads = 16;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      done.add(pool.submit(() -> {
        go.await();
        for (int i = 0; i < 20_000; i++) {
          long h = b.tryAcquire();
          if (h == Bulkhead.NO_PERMIT) {
            continue;
          }
          taken.incrementAndGet();
          int now = held.incrementAndGet();
          most.accumulateAndGet(now, Math::max);
          held.decrementAndGet();
          if (b.release(h)) {
            released.incrementAndGet();
          }
          if (b.release(h)) {
            throw new AssertionError("released twice");
          }
        }
        return null;
      }));
    }
    go.countDown();
    for (Future<?> f : done) {
      f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(most.get()).isBetween(1, 5);
    assertThat(released.get()).isEqualTo(taken.get());
    assertThat(b.acquired()).isEqualTo(taken.get());
    assertThat(b.inFlight()).isZero();
    assertThat(b.expired()).isZero();
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> Bulkhead.builder(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("but was 0");
    assertThatThrownBy(() -> Bulkhead.builder(Bulkhead.MAX_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1048577");
    assertThatThrownBy(() -> Bulkhead.builder(1).lease(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
  }
}

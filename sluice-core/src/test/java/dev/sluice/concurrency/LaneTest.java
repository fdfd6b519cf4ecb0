package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The in-memory limiter's lock-free lane of handle permits: its slots are capacity the key lends,
 * taken back whenever another acquisition or a waiter needs it, so the key's limit holds for
 * every kind of permit at once, a waiter is served by a lane release, and leases end as the
 * key's other permits' do.
 */
class LaneTest {
  private static final long SECOND = 1_000_000_000L;
  private final TestTime time = new TestTime();

  private ConcurrencyLimiter limiter(int limit) {
    return ConcurrencyLimiter.builder().limit(limit).clock(time).scheduler(time)
        .lease(Duration.ofSeconds(10)).build();
  }

  @Test
  void handlesUseTheLane_andItsReserveGoesToAPermitThatNeedsIt() {
    ConcurrencyLimiter l = limiter(3);
    long a = l.tryAcquireHandle("k");
    assertThat(Lane.isLane(a)).as("a key without listener, group or adaptive limit").isTrue();
    assertThat(l.inFlight("k")).as("the lane's reserve is not in flight").isEqualTo(1);
    Acquisition two = l.tryAcquire("k", 2);
    assertThat(two.isAcquired()).as("the reserve comes back to the key").isTrue();
    assertThat(two.inFlight()).isEqualTo(3);
    assertThat(l.tryAcquireHandle("k")).isEqualTo(ConcurrencyLimiter.NO_PERMIT);
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    assertThat(l.release("k", a, Outcome.SUCCESS)).isTrue();
    assertThat(l.release("k", a, Outcome.SUCCESS)).as("once").isFalse();
    assertThat(l.inFlight("k")).isEqualTo(2);
    two.permit().close();
    assertThat(l.inFlight("k")).isZero();
    long b = l.tryAcquireHandle("k");
    long c = l.tryAcquireHandle("k");
    long d = l.tryAcquireHandle("k");
    assertThat(Math.min(b, Math.min(c, d))).isNotNegative();
    assertThat(l.tryAcquireHandle("k")).isEqualTo(ConcurrencyLimiter.NO_PERMIT);
    assertThat(l.stats().acquired()).isEqualTo(5);
    assertThat(l.stats().inFlight()).isEqualTo(3);
    assertThat(l.stats().ended(Outcome.SUCCESS)).isEqualTo(2);
  }

  @Test
  void aWaiter_isServedByALaneRelease() throws Exception {
    ConcurrencyLimiter l = limiter(1);
    long h = l.tryAcquireHandle("k");
    CompletableFuture<Acquisition> waiting =
        l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(5));
    assertThat(waiting).isNotDone();
    assertThat(l.tryAcquireHandle("k")).as("nobody passes the waiter")
        .isEqualTo(ConcurrencyLimiter.NO_PERMIT);
    assertThat(l.release("k", h, Outcome.SUCCESS)).isTrue();
    assertThat(waiting.get(10, TimeUnit.SECONDS).isAcquired()).isTrue();
    assertThat(l.inFlight("k")).isEqualTo(1);
    waiting.get().permit().close();
    assertThat(Lane.isLane(l.tryAcquireHandle("k"))).as("the lane again, once nobody waits")
        .isTrue();
  }

  @Test
  void aLaneHandlesLeaseEnds_aLeaseAfterItWasTaken() {
    ConcurrencyLimiter l = limiter(1);
    long h = l.tryAcquireHandle("k");
    time.advance(10 * SECOND - 1);
    assertThat(l.tryAcquireHandle("k")).isEqualTo(ConcurrencyLimiter.NO_PERMIT);
    time.advance(1);
    long again = l.tryAcquireHandle("k");
    assertThat(again).isNotNegative();
    assertThat(l.release("k", h, Outcome.SUCCESS)).as("its lease ended").isFalse();
    assertThat(l.stats().ended(Outcome.EXPIRED)).isEqualTo(1);
    assertThat(l.release("k", again, Outcome.SUCCESS)).isTrue();
  }

  @Test
  void permitObjects_rideTheLane_andEndOnceThroughIt() {
    ConcurrencyLimiter l = limiter(3);
    Permit first = l.tryAcquire("k").permit();
    assertThat(Lane.isLane(first.id())).as("a new key: its first permit is the monitor's")
        .isFalse();
    Acquisition a = l.tryAcquire("k");
    Permit p = a.permit();
    assertThat(Lane.isLane(p.id())).as("a known key without listener, group or adaptive limit")
        .isTrue();
    assertThat(a.inFlight()).isEqualTo(2);
    assertThat(a.limit()).isEqualTo(3);
    assertThat(l.inFlight("k")).as("the lane's reserve is not in flight").isEqualTo(2);
    assertThat(l.tryAcquire("k", 2).refusal()).as("weight 2 fits in one: the reserve came back")
        .isEqualTo(Refusal.FULL);
    assertThat(p.isActive()).isTrue();
    assertThat(p.release(Outcome.DROPPED)).isTrue();
    assertThat(p.release(Outcome.SUCCESS)).as("once").isFalse();
    assertThat(p.isActive()).isFalse();
    first.close();
    assertThat(l.inFlight("k")).isZero();
    assertThat(l.stats().acquired()).isEqualTo(2);
    assertThat(l.stats().ended(Outcome.DROPPED)).isEqualTo(1);
    assertThat(l.stats().ended(Outcome.SUCCESS)).isEqualTo(1);
    assertThat(l.stats().inFlight()).isZero();
  }

  @Test
  void aLanePermitsLease_endsALeaseAfterItWasTakenOrRenewed() {
    ConcurrencyLimiter l = limiter(2);
    l.tryAcquire("k").permit().close();   // the key is known
    Permit p = l.tryAcquire("k").permit();
    assertThat(Lane.isLane(p.id())).isTrue();
    assertThat(p.expiresAtNanos() - p.acquiredAtNanos()).isEqualTo(10 * SECOND);
    time.advance(9 * SECOND);
    assertThat(p.renew()).isTrue();
    assertThat(p.expiresAtNanos()).isEqualTo(time.nanoTime() + 10 * SECOND);
    time.advance(10 * SECOND - 1);
    assertThat(l.tryAcquire("k", 2).refusal()).as("renewed: a lease from the renewal")
        .isEqualTo(Refusal.FULL);
    assertThat(p.isActive()).isTrue();
    time.advance(1);
    Acquisition two = l.tryAcquire("k", 2);   // the monitor looks, and takes the lease back
    assertThat(two.isAcquired()).as("its lease ended: the key's room is back").isTrue();
    two.permit().close();
    assertThat(p.isActive()).as("its lease ended").isFalse();
    assertThat(p.renew()).isFalse();
    assertThat(p.release(Outcome.SUCCESS)).as("its lease ended: nothing to give back").isFalse();
    assertThat(l.stats().ended(Outcome.EXPIRED)).isEqualTo(1);
    assertThat(l.stats().inFlight()).isZero();
  }

  @Test
  void aWaiter_isServedByALanePermitsRelease() throws Exception {
    ConcurrencyLimiter l = limiter(1);
    l.tryAcquire("k").permit().close();
    Permit p = l.tryAcquire("k").permit();
    assertThat(Lane.isLane(p.id())).isTrue();
    CompletableFuture<Acquisition> waiting =
        l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(5));
    assertThat(waiting).isNotDone();
    assertThat(l.tryAcquire("k").refusal()).as("nobody passes the waiter")
        .isEqualTo(Refusal.FULL);
    p.close();
    assertThat(waiting.get(10, TimeUnit.SECONDS).isAcquired()).isTrue();
    waiting.get().permit().close();
    assertThat(l.inFlight("k")).isZero();
  }

  @Test
  void withFairQueuing_permitObjectsStayWithTheMonitor() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(2).clock(time).scheduler(time)
        .fairQueuing(FairQueuing.of(64, 4, 10)).build();
    l.tryAcquire("k").permit().close();
    assertThat(Lane.isLane(l.tryAcquire("k").permit().id())).isFalse();
  }

  @Test
  void aKeyWhoseLaneHoldsNothing_isSwept_andOneHoldingAHandleIsNot() {
    ConcurrencyLimiter l = limiter(2);
    long h = l.tryAcquireHandle("busy");
    l.release("idle", l.tryAcquireHandle("idle"), Outcome.SUCCESS);
    time.advance(6 * SECOND);
    assertThat(l.release("busy", h, Outcome.SUCCESS)).isTrue();
    long again = l.tryAcquireHandle("busy");
    time.advance(5 * SECOND);   // the sweep at 10 s: "idle" idle a lease, "busy" holds a handle
    assertThat(l.keys()).isEqualTo(1);
    assertThat(l.inFlight("busy")).isEqualTo(1);
    assertThat(l.release("busy", again, Outcome.SUCCESS)).isTrue();
    time.advance(5 * SECOND);
    assertThat(l.keys()).isZero();
  }

  /**
   * Eight threads on one key of limit 3 mix lane handles, permit objects of weight 1 and 2, and
   * waits: the weight held at once never passes 3, every wait ends (no released permit is left
   * idle behind a waiter), and every permit ends once.
   */
  @Test
  void manyThreads_mixingHandlesPermitsAndWaits_neverPassTheLimit() throws Exception {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(3).maxWaiters(1000)
        .lease(Duration.ofMinutes(5)).build();
    int threads = 8;
    AtomicInteger held = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicLong granted = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> all = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int seed = t;
      all.add(pool.submit(() -> {
        Random r = new Random(seed);
        go.await();
        for (int i = 0; i < 20_000; i++) {
          int kind = r.nextInt(10);
          if (kind < 6) {
            long h = l.tryAcquireHandle("k");
            if (h >= 0) {
              granted.incrementAndGet();
              most.accumulateAndGet(held.incrementAndGet(), Math::max);
              held.decrementAndGet();
              assertThat(l.release("k", h, Outcome.SUCCESS)).isTrue();
            }
          } else {
            int weight = kind == 9 ? 2 : 1;
            Acquisition a = kind < 8 ? l.tryAcquire("k", weight, Priority.NORMAL)
                : l.acquire("k", weight, Priority.NORMAL, Duration.ofSeconds(30));
            if (a.isAcquired()) {
              granted.incrementAndGet();
              most.accumulateAndGet(held.addAndGet(weight), Math::max);
              held.addAndGet(-weight);
              assertThat(a.permit().release(Outcome.SUCCESS)).isTrue();
            } else {
              assertThat(a.refusal()).isIn(Refusal.FULL, Refusal.SHED);
            }
          }
        }
        return null;
      }));
    }
    go.countDown();
    for (Future<?> f : all) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(most.get()).as("the most weight held at once").isLessThanOrEqualTo(3);
    assertThat(l.inFlight("k")).isZero();
    ConcurrencyStats s = l.stats();
    assertThat(s.acquired()).isEqualTo(granted.get());
    assertThat(s.ended(Outcome.SUCCESS)).isEqualTo(granted.get());
    assertThat(s.inFlight()).isZero();
    assertThat(s.waiting()).isZero();
  }

  /**
   * The race the lane's Dekker pair exists for: a waiter queues while the only handle is being
   * released on another thread. Whichever comes first, the waiter gets the permit at once, never
   * only when its wait runs out.
   */
  @Test
  void aWaiterQueuingAsTheHandleIsReleased_isServed_everyTime() throws Exception {
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      for (int round = 0; round < 2_000; round++) {
        ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(1).build();
        long h = l.tryAcquireHandle("k");
        CountDownLatch ready = new CountDownLatch(1);
        Future<Boolean> release = other.submit(() -> {
          ready.await();
          return l.release("k", h, Outcome.SUCCESS);
        });
        ready.countDown();
        CompletableFuture<Acquisition> waiting =
            l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(60));
        assertThat(release.get(10, TimeUnit.SECONDS)).isTrue();
        Acquisition a = waiting.get(10, TimeUnit.SECONDS);
        assertThat(a.isAcquired()).as("round " + round).isTrue();
        a.permit().close();
        l.close();
      }
    } finally {
      other.shutdownNow();
    }
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyGroup;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencyStats;
import dev.sluice.concurrency.FairQueuing;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.PermitEnd;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.spi.StoreUnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every concurrency limiter shows, in memory or on a shared store, as JUnit tests:
 * never more than the limit in flight across threads and instances (an independent counter
 * checks), leases that end, releases that change nothing once a lease has ended, weights,
 * priorities and waiters. A store module extends this class and supplies {@link #factory()};
 * time is the manual clock, which stores take through their test hook.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class ConcurrencyConformanceSuite {
  /** For a store's test class, which extends this one. */
  protected ConcurrencyConformanceSuite() {}

  /** The store under test (null from {@link PermitStoreFactory#create}: the in-memory limiter). */
  protected abstract PermitStoreFactory factory();

  protected final ManualClock clock = new ManualClock(1_000_000_000_000L);
  private final List<ConcurrencyLimiter> made = new ArrayList<>();
  private PermitStore store;
  private boolean storeMade;

  /** Instances sharing one store's keys (in memory, one limiter serves as every instance). */
  protected List<ConcurrencyLimiter> instances(int n, UnaryOperator<ConcurrencyLimiter.Builder> settings) {
    if (!storeMade) {
      store = factory().create(clock);
      storeMade = true;
    }
    List<ConcurrencyLimiter> all = new ArrayList<>();
    ConcurrencyLimiter single = null;
    for (int i = 0; i < n; i++) {
      if (store == null && single != null) {
        all.add(single);
        continue;
      }
      ConcurrencyLimiter.Builder b = ConcurrencyLimiter.builder().clock(clock).scheduler(clock)
          .pollInterval(Duration.ofMillis(10));
      if (store != null) {
        b.store(store);
      }
      single = settings.apply(b).build();
      made.add(single);
      all.add(single);
    }
    return all;
  }

  protected ConcurrencyLimiter limiter(UnaryOperator<ConcurrencyLimiter.Builder> settings) {
    return instances(1, settings).get(0);
  }

  @AfterEach
  void closeLimiters() {
    made.forEach(ConcurrencyLimiter::close);
  }

  private static Acquisition get(CompletableFuture<Acquisition> f) throws Exception {
    return f.get(10, TimeUnit.SECONDS);
  }

  /**
   * Until {@code n} acquisitions wait on {@code key}: on a store, an acquisition first asks the
   * store and joins the queue when its answer (a refusal) comes, on another thread.
   */
  protected static void awaitWaiting(ConcurrencyLimiter l, String key, int n)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (l.waiting(key) < n && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertThat(l.waiting(key)).as("waiting on " + key).isEqualTo(n);
  }

  // ------------------------------------------------------------------------------ the bound

  /**
   * Two instances, eight threads each (half of them taking handle permits), on a limit of 5: an
   * independent counter, raised after each acquisition and lowered before its release, never
   * passes 5, and every permit taken is given back exactly once.
   */
  // ThreadPriorityCheck: a test's spin while other threads run; what it checks does not depend on it
  @SuppressWarnings("ThreadPriorityCheck")
  @Test
  public void neverMoreThanTheLimitInFlight_acrossThreadsAndInstances() throws Exception {
    int limit = 5;
    List<ConcurrencyLimiter> two = instances(2, b -> b.limit(limit));
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicLong acquired = new AtomicLong();
    AtomicLong released = new AtomicLong();
    int threads = 16;
    int rounds = 150;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      ConcurrencyLimiter l = two.get(t % 2);
      boolean handles = t % 4 < 2;   // half the threads take handle permits
      done.add(pool.submit(() -> {
        start.await();
        for (int i = 0; i < rounds; i++) {
          if (handles) {
            long h = l.tryAcquireHandle("shared");
            if (h < 0) {
              continue;
            }
            acquired.incrementAndGet();
            most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            Thread.yield();
            inFlight.decrementAndGet();
            if (l.release("shared", h, Outcome.SUCCESS)) {
              released.incrementAndGet();
            }
            continue;
          }
          Acquisition a = l.tryAcquire("shared");
          if (!a.isAcquired()) {
            // full; or, on a busy host, a store call past its timeout, refused closed (the
            // permit it may have taken is cancelled): neither holds anything
            assertThat(a.refusal()).isIn(Refusal.FULL, Refusal.STORE_UNAVAILABLE);
            continue;
          }
          acquired.incrementAndGet();
          int now = inFlight.incrementAndGet();
          most.accumulateAndGet(now, Math::max);
          Thread.yield();
          inFlight.decrementAndGet();
          if (a.permit().release(Outcome.SUCCESS)) {
            released.incrementAndGet();
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(most.get()).isLessThanOrEqualTo(limit);
    assertThat(acquired.get()).isGreaterThan(0);
    assertThat(released.get()).isEqualTo(acquired.get());
    assertThat(two.get(0).inFlight("shared")).isZero();
    assertThat(two.get(1).inFlight("shared")).isZero();
  }

  @Test
  public void aFullKeyRefuses_sayingTheLimitAndTheWeightInFlight() {
    ConcurrencyLimiter l = limiter(b -> b.limit(2));
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
    Acquisition second = l.tryAcquire("k");
    assertThat(second.isAcquired()).isTrue();
    assertThat(second.inFlight()).isEqualTo(2);
    Acquisition third = l.tryAcquire("k");
    assertThat(third.isAcquired()).isFalse();
    assertThat(third.refusal()).isEqualTo(Refusal.FULL);
    assertThat(third.limit()).isEqualTo(2);
    assertThat(third.inFlight()).isEqualTo(2);
    assertThat(l.tryAcquire("other").isAcquired()).isTrue();   // keys are apart
  }

  /** Stats count what callers were answered and what ended; in flight is what is held. */
  @Test
  public void stats_countAcquisitionsRefusalsEndsAndTheWeightHeld() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(3).lease(Duration.ofSeconds(1))
        .share(Priority.SHEDDABLE, 0.5));
    Permit two = l.tryAcquire("k", 2).permit();
    assertThat(l.tryAcquire("k", 2).refusal()).isEqualTo(Refusal.FULL);
    assertThat(l.tryAcquire("k", 1, Priority.SHEDDABLE).refusal()).isEqualTo(Refusal.SHED);
    Permit one = l.tryAcquire("k").permit();
    assertThat(l.limit("k")).isEqualTo(3);
    assertThat(l.stats().inFlight()).isEqualTo(3);
    CompletableFuture<Acquisition> waiter = l.acquireAsync("k", 1, Duration.ofSeconds(5));
    awaitWaiting(l, "k", 1);
    assertThat(l.stats().waiting()).isEqualTo(1);
    two.release(Outcome.DROPPED);
    Permit third = get(waiter).permit();
    assertThat(l.stats().waiting()).isZero();
    one.close();
    third.close();
    ConcurrencyStats s = l.stats();
    assertThat(s.acquired()).isEqualTo(3);
    assertThat(s.refused(Refusal.FULL)).isEqualTo(1);
    assertThat(s.refused(Refusal.SHED)).isEqualTo(1);
    assertThat(s.refused()).isEqualTo(2);
    assertThat(s.ended(Outcome.DROPPED)).isEqualTo(1);
    assertThat(s.ended(Outcome.SUCCESS)).isEqualTo(2);
    assertThat(s.inFlight()).isZero();
    assertThat(s.degraded()).isZero();
    assertThat(s.storeErrors()).isZero();
  }

  // ------------------------------------------------------------------------------ leases

  /** A holder that never releases costs one lease time, not a moment more or less. */
  @Test
  public void aLostReleaseCostsExactlyOneLease() {
    ConcurrencyLimiter l = limiter(b -> b.limit(2).lease(Duration.ofSeconds(1)));
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();   // both forgotten by their holder
    clock.advance(Duration.ofMillis(999));
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    clock.advance(Duration.ofMillis(1));
    Acquisition back = l.tryAcquire("k");
    assertThat(back.isAcquired()).isTrue();
    assertThat(back.inFlight()).isEqualTo(1);
    assertThat(l.inFlight("k")).isEqualTo(1);
  }

  /** A release after the lease ended returns false and takes nothing from the permits in flight. */
  @Test
  public void releaseAfterExpiry_changesNothing() {
    List<PermitEnd> ends = new CopyOnWriteArrayList<>();
    ConcurrencyLimiter l = limiter(b -> b.limit(1).lease(Duration.ofSeconds(1))
        .onPermitEnd(ends::add));
    Permit late = l.tryAcquire("k").permit();
    clock.advance(Duration.ofSeconds(1));
    Permit next = l.tryAcquire("k").permit();
    assertThat(late.release(Outcome.SUCCESS)).isFalse();
    assertThat(l.inFlight("k")).isEqualTo(1);
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);   // next still counts
    assertThat(next.release(Outcome.SUCCESS)).isTrue();
    assertThat(l.inFlight("k")).isZero();
    assertThat(ends).extracting(PermitEnd::outcome).contains(Outcome.EXPIRED, Outcome.SUCCESS);
  }

  @Test
  public void renew_extendsTheLeaseFromNow_andFailsOnceItEnded() {
    ConcurrencyLimiter l = limiter(b -> b.limit(1).lease(Duration.ofSeconds(1)));
    Permit p = l.tryAcquire("k").permit();
    clock.advance(Duration.ofMillis(600));
    assertThat(p.renew()).isTrue();   // now until 1.6 s
    clock.advance(Duration.ofMillis(600));
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    clock.advance(Duration.ofMillis(400));
    assertThat(p.renew()).isFalse();   // ended at 1.6 s
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
  }

  @Test
  public void aSecondRelease_isHarmless() {
    ConcurrencyLimiter l = limiter(b -> b.limit(2));
    Permit a = l.tryAcquire("k").permit();
    Permit b2 = l.tryAcquire("k").permit();
    assertThat(a.release(Outcome.DROPPED)).isTrue();
    assertThat(a.release(Outcome.SUCCESS)).isFalse();
    a.close();
    assertThat(l.inFlight("k")).isEqualTo(1);
    assertThat(b2.isActive()).isTrue();
    b2.close();
    assertThat(l.inFlight("k")).isZero();
  }

  // ------------------------------------------------------------------------------ handles

  /**
   * Handle permits (a number, no object): they count as permits, end exactly once, a stale or
   * foreign handle changes nothing, and a forgotten one comes back with its lease.
   */
  @Test
  public void handles_countEndOnce_andComeBackWithTheirLease() {
    ConcurrencyLimiter l = limiter(b -> b.limit(2).lease(Duration.ofSeconds(1)));
    long one = l.tryAcquireHandle("k");
    long two = l.tryAcquireHandle("k");
    assertThat(one).isNotNegative().isNotEqualTo(two);
    assertThat(two).isNotNegative();
    assertThat(l.tryAcquireHandle("k")).isEqualTo(ConcurrencyLimiter.NO_PERMIT);
    assertThat(l.tryAcquire("k").refusal()).isEqualTo(Refusal.FULL);
    assertThat(l.release("other", one, Outcome.SUCCESS)).as("not that key's").isFalse();
    assertThat(l.release("k", one, Outcome.SUCCESS)).isTrue();
    assertThat(l.release("k", one, Outcome.SUCCESS)).as("once").isFalse();
    long three = l.tryAcquireHandle("k");
    assertThat(three).isNotNegative();
    assertThat(l.release("k", one, Outcome.SUCCESS)).as("stale").isFalse();
    assertThat(l.inFlight("k")).isEqualTo(2);
    clock.advance(Duration.ofSeconds(1));   // both leases end: nobody released them
    assertThat(l.tryAcquireHandle("k")).isNotNegative();
    assertThat(l.release("k", two, Outcome.DROPPED)).as("its lease ended").isFalse();
    assertThat(l.release("k", three, Outcome.DROPPED)).isFalse();
    assertThat(l.inFlight("k")).isEqualTo(1);
    assertThat(l.stats().ended(Outcome.EXPIRED)).isEqualTo(2);
  }

  /** An asynchronous release ends the permit once and the store lets it go. */
  @Test
  public void releaseAsync_endsOnce_andTheKeyComesBack() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1));
    Permit p = l.tryAcquire("k").permit();
    assertThat(p.releaseAsync(Outcome.SUCCESS).get(10, TimeUnit.SECONDS)).isTrue();
    assertThat(p.releaseAsync(Outcome.SUCCESS).get(10, TimeUnit.SECONDS)).isFalse();
    assertThat(l.inFlight("k")).isZero();
    assertThat(l.tryAcquire("k").isAcquired()).isTrue();
  }

  // ------------------------------------------------------------------------------ weights

  @Test
  public void weights_countAsThatManyPermits() {
    ConcurrencyLimiter l = limiter(b -> b.limit(5));
    Permit three = l.tryAcquire("k", 3).permit();
    assertThat(l.tryAcquire("k", 3).refusal()).isEqualTo(Refusal.FULL);
    Acquisition two = l.tryAcquire("k", 2);
    assertThat(two.isAcquired()).isTrue();
    assertThat(two.inFlight()).isEqualTo(5);
    assertThat(l.tryAcquire("k", 6).refusal()).isEqualTo(Refusal.TOO_HEAVY);
    three.close();
    assertThat(l.inFlight("k")).isEqualTo(2);
    assertThat(l.tryAcquire("k", 3).isAcquired()).isTrue();
  }

  // ------------------------------------------------------------------------------ priorities

  /**
   * Sheddable traffic saturates its share (80% of 10) and is shed past it; critical requests
   * still get the two permits it leaves, then find the key full.
   */
  @Test
  public void sheddableTrafficSaturates_criticalStillGetsItsShare() {
    ConcurrencyLimiter l = limiter(b -> b.limit(10).share(Priority.SHEDDABLE, 0.8));
    int sheddable = 0;
    for (int i = 0; i < 50; i++) {
      Acquisition a = l.tryAcquire("api", 1, Priority.SHEDDABLE);
      if (a.isAcquired()) {
        sheddable++;
      } else {
        assertThat(a.refusal()).isEqualTo(Refusal.SHED);
      }
    }
    assertThat(sheddable).isEqualTo(8);
    assertThat(l.tryAcquire("api", 1, Priority.CRITICAL).isAcquired()).isTrue();
    assertThat(l.tryAcquire("api", 1, Priority.CRITICAL).isAcquired()).isTrue();
    assertThat(l.tryAcquire("api", 1, Priority.CRITICAL).refusal()).isEqualTo(Refusal.FULL);
    assertThat(l.inFlight("api")).isEqualTo(10);
  }

  // ------------------------------------------------------------------------------ waiting

  @Test
  public void aWaiter_getsTheReleasedPermit() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1));
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = l.acquireAsync("k", 1, Duration.ofSeconds(5));
    awaitWaiting(l, "k", 1);
    clock.advance(Duration.ofMillis(50));
    assertThat(waiting).isNotDone();
    held.close();
    Acquisition a = get(waiting);
    assertThat(a.isAcquired()).isTrue();
    assertThat(l.inFlight("k")).isEqualTo(1);
    a.permit().close();
    assertThat(l.inFlight("k")).isZero();
  }

  /**
   * Fair queuing among flows, for an instance's waiters: twenty flows have waited once and gone
   * (the typical flow's demand); a quiet flow that then queues behind ten waiters of a flooding
   * flow is served after at most the flood's first four, those it queued before it asked three
   * times the typical flow's demand (first in, first out would serve it eleventh).
   */
  // ThreadPriorityCheck: a test's spin while the store's answers come; what it checks does not depend on it
  @SuppressWarnings("ThreadPriorityCheck")
  @Test
  public void fairQueuing_aQuietFlowIsNotServedBehindAFlood() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1)
        .fairQueuing(FairQueuing.of(64, 4, 50)));
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> first =
        l.acquireAsync("k", "someone", 1, Priority.NORMAL, Duration.ofSeconds(30));
    awaitWaiting(l, "k", 1);   // it stays: on a store, the key's queues live while it has waiters
    for (int i = 0; i < 20; i++) {
      CompletableFuture<Acquisition> f =
          l.acquireAsync("k", "flow-" + i, 1, Priority.NORMAL, Duration.ofSeconds(30));
      awaitWaiting(l, "k", 2);
      f.cancel(false);
      awaitWaiting(l, "k", 1);
    }
    List<CompletableFuture<Acquisition>> flood = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      flood.add(l.acquireAsync("k", "flood", 1, Priority.NORMAL, Duration.ofSeconds(30)));
      awaitWaiting(l, "k", i + 2);
    }
    CompletableFuture<Acquisition> quiet =
        l.acquireAsync("k", "quiet", 1, Priority.NORMAL, Duration.ofSeconds(30));
    awaitWaiting(l, "k", 12);
    held.close();
    get(first).permit().close();   // the first to come, a light flow, first served
    int before = 0;
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!quiet.isDone() && System.nanoTime() < end) {
      CompletableFuture<Acquisition> served = flood.stream().filter(f -> f.isDone()
          && f.join().isAcquired() && f.join().permit().isActive()).findFirst().orElse(null);
      if (served == null) {
        Thread.yield();
        continue;
      }
      served.join().permit().close();
      before++;
    }
    assertThat(get(quiet).isAcquired()).isTrue();
    assertThat(before).as("flood waiters served before the quiet one").isLessThanOrEqualTo(4);
    get(quiet).permit().close();
    for (CompletableFuture<Acquisition> f : flood) {
      Acquisition a = get(f);
      if (a.isAcquired()) {
        a.permit().close();
      }
    }
  }

  /**
   * Across a fleet, fair queuing is each instance's (docs/concurrency.md, "On Redis, PostgreSQL
   * and MySQL"): an instance that releases a permit asks for its own head waiter at once, so
   * another instance's waiter gets a permit at its first poll after a release that its own
   * instance does not take back. Here instance A queues three waiters of a flood and B one of a
   * quiet flow; each of A's releases may go to A's flood, but B's waiter is served within two
   * polls of A's last, and every waiter is served once. In memory, one limiter serves as both
   * instances, and fair queuing among them is exact.
   */
  @Test
  public void fairQueuing_acrossInstances_isEachInstances_aWaiterElsewhereGetsTheNextFreePermit()
      throws Exception {
    List<ConcurrencyLimiter> two = instances(2, b -> b.limit(1)
        .fairQueuing(FairQueuing.of(64, 4, 50)));
    ConcurrencyLimiter a = two.get(0);
    ConcurrencyLimiter b = two.get(1);
    Permit held = a.tryAcquire("k").permit();
    List<CompletableFuture<Acquisition>> flood = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      flood.add(a.acquireAsync("k", "flood", 1, Priority.NORMAL, Duration.ofSeconds(30)));
      awaitWaiting(a, "k", i + 1);
    }
    CompletableFuture<Acquisition> quiet =
        b.acquireAsync("k", "quiet", 1, Priority.NORMAL, Duration.ofSeconds(30));
    awaitWaiting(b, "k", a == b ? 4 : 1);
    held.close();
    int floodServed = 0;
    int pollsAfterTheFlood = 0;
    for (int i = 0; i < 400 && !quiet.isDone(); i++) {
      for (CompletableFuture<Acquisition> f : flood) {
        if (f.isDone() && f.join().isAcquired() && f.join().permit().isActive()) {
          f.join().permit().close();
          floodServed++;
        }
      }
      if (floodServed == flood.size()) {
        pollsAfterTheFlood++;
      }
      clock.advance(Duration.ofMillis(10));   // a poll, whose answer comes on another thread
      try {
        quiet.get(20, TimeUnit.MILLISECONDS);
      } catch (TimeoutException notYet) {
        // the next poll
      }
    }
    assertThat(get(quiet).isAcquired()).isTrue();
    assertThat(pollsAfterTheFlood).as("polls after the flood's last release").isLessThanOrEqualTo(2);
    get(quiet).permit().close();
    // on a busy host the quiet waiter may come between two of the flood's: the flood's rest
    // then learn of the quiet one's release at A's next polls
    for (int i = 0; i < 400 && flood.stream().anyMatch(f -> !f.isDone()); i++) {
      for (CompletableFuture<Acquisition> f : flood) {
        if (f.isDone() && f.join().isAcquired() && f.join().permit().isActive()) {
          f.join().permit().close();
        }
      }
      clock.advance(Duration.ofMillis(10));
      Thread.sleep(5);
    }
    for (CompletableFuture<Acquisition> f : flood) {
      Acquisition got = get(f);
      assertThat(got.isAcquired()).isTrue();
      if (got.permit().isActive()) {
        got.permit().close();
      }
    }
    assertThat(a.inFlight("k")).isZero();
  }

  /**
   * A permit's end tells how long its acquisition waited, so that an adaptive limit can tell a
   * call made late by its wait in the queue from one the backend made late.
   */
  @Test
  public void aPermitsEnd_tellsHowLongItWaited() throws Exception {
    List<PermitEnd> ends = new CopyOnWriteArrayList<>();
    ConcurrencyLimiter l = limiter(b -> b.limit(1).onPermitEnd(ends::add));
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = l.acquireAsync("k", 1, Duration.ofSeconds(5));
    awaitWaiting(l, "k", 1);
    clock.advance(Duration.ofMillis(50));
    held.close();
    Acquisition a = get(waiting);
    assertThat(a.waitedNanos()).isGreaterThanOrEqualTo(Duration.ofMillis(50).toNanos());
    clock.advance(Duration.ofMillis(10));
    a.permit().release(Outcome.DROPPED);
    assertThat(ends).hasSize(2);
    assertThat(ends.get(0).waitedNanos()).as("granted at once").isZero();
    assertThat(ends.get(0).droppedByItsWait()).isFalse();
    PermitEnd waited = ends.get(1);
    assertThat(waited.waitedNanos()).isEqualTo(a.waitedNanos());
    assertThat(waited.droppedByItsWait()).as("waited 50 ms, held 10 ms, dropped").isTrue();
  }

  @Test
  public void aWaiter_timesOut_andHoldsNothing() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1));
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = l.acquireAsync("k", 1, Duration.ofMillis(100));
    awaitWaiting(l, "k", 1);
    clock.advance(Duration.ofMillis(100));
    Acquisition a = get(waiting);
    assertThat(a.refusal()).isEqualTo(Refusal.TIMED_OUT);
    held.close();
    // on a store, an ask for the waiter may still be answered after the release above: a permit
    // granted to a waiter that left is released at once, before the key leaves the limiter's
    // waiting keys (keys() counts them), so the key comes back to zero and stays there
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while ((l.inFlight("k") != 0 || (store != null && l.keys() != 0))
        && System.nanoTime() < end) {
      Thread.sleep(1);   // polling another thread's store call, not timing the test
    }
    assertThat(l.inFlight("k")).isZero();
    assertThat(l.waiting("k")).isZero();
  }

  /**
   * Deadline-aware waits (on by default): permits held 100 ms on a limit of 2 make a wait for
   * one permit 50 ms; a caller with 40 ms left is refused at once (DEADLINE, nothing queued), one
   * with 60 ms waits; with {@code deadlineAware(false)} both wait.
   */
  @Test
  public void aWaitLongerThanTheDeadline_isRefusedAtOnce() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(2));
    Permit learn = l.tryAcquire("k").permit();
    clock.advance(Duration.ofMillis(100));
    assertThat(l.usefulWait("k", Duration.ofMillis(250))).as("nothing learned yet")
        .isEqualTo(Duration.ofMillis(250));
    learn.close();   // the key's permits are held 100 ms
    assertThat(l.usefulWait("k", Duration.ofMillis(250))).as("the deadline less the work")
        .isEqualTo(Duration.ofMillis(150));
    assertThat(l.usefulWait("other", Duration.ofMillis(250))).isEqualTo(Duration.ofMillis(250));
    Permit one = l.tryAcquire("k").permit();
    Permit two = l.tryAcquire("k").permit();
    Acquisition hopeless = get(l.acquireAsync("k", 1, Duration.ofMillis(40)));
    assertThat(hopeless.refusal()).isEqualTo(Refusal.DEADLINE);
    assertThat(l.waiting("k")).isZero();
    assertThat(l.stats().refused(Refusal.DEADLINE)).isEqualTo(1);
    CompletableFuture<Acquisition> hopeful = l.acquireAsync("k", 1, Duration.ofMillis(60));
    awaitWaiting(l, "k", 1);
    one.close();
    assertThat(get(hopeful).isAcquired()).isTrue();
    get(hopeful).permit().close();
    two.close();

    ConcurrencyLimiter patient = limiter(b -> b.limit(1).deadlineAware(false));
    Permit learnAgain = patient.tryAcquire("p").permit();
    clock.advance(Duration.ofMillis(100));
    learnAgain.close();
    Permit held = patient.tryAcquire("p").permit();
    CompletableFuture<Acquisition> waits = patient.acquireAsync("p", 1, Duration.ofMillis(40));
    awaitWaiting(patient, "p", 1);
    clock.advance(Duration.ofMillis(40));
    assertThat(get(waits).refusal()).isEqualTo(Refusal.TIMED_OUT);
    held.close();
  }

  /** Advances the manual clock in steps of 10 ms (a store's poll interval) for {@code millis}. */
  private void step(long millis) throws InterruptedException {
    for (long t = 0; t < millis; t += 10) {
      clock.advance(Duration.ofMillis(10));
      Thread.sleep(2);   // a poll's answer comes on another thread
    }
  }

  /**
   * CoDel (5 ms, 100 ms) on a limit of 1: a queue whose waits are short never sheds; one whose
   * waits stay above 5 ms for 100 ms refuses its standing waiters ({@code OVERLOADED}) though
   * their timeouts are 10 s, and then takes waiters again.
   */
  @Test
  public void codel_aStandingQueueSheds_untilItDrains() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1)
        .codel(Duration.ofMillis(5), Duration.ofMillis(100)));
    // short waits: served within 2 ms, again and again, nobody is refused
    Permit held = l.tryAcquire("k").permit();
    for (int i = 0; i < 30; i++) {
      CompletableFuture<Acquisition> quick = l.acquireAsync("k", 1, Duration.ofSeconds(10));
      awaitWaiting(l, "k", 1);
      clock.advance(Duration.ofMillis(2));
      held.close();
      Acquisition a = get(quick);
      assertThat(a.isAcquired()).as("wait " + i).isTrue();
      held = a.permit();
      clock.advance(Duration.ofMillis(2));
    }
    assertThat(l.stats().refused(Refusal.OVERLOADED)).isZero();
    // a standing queue: three waiters, the first served after 10 ms, the others still waiting
    // 120 ms later
    CompletableFuture<Acquisition> w1 = l.acquireAsync("k", 1, Duration.ofSeconds(10));
    awaitWaiting(l, "k", 1);
    CompletableFuture<Acquisition> w2 = l.acquireAsync("k", 1, Duration.ofSeconds(10));
    awaitWaiting(l, "k", 2);
    CompletableFuture<Acquisition> w3 = l.acquireAsync("k", 1, Duration.ofSeconds(10));
    awaitWaiting(l, "k", 3);
    step(10);
    held.close();
    Acquisition first = get(w1);
    assertThat(first.isAcquired()).isTrue();
    step(120);
    first.permit().close();
    assertThat(get(w2).refusal()).isEqualTo(Refusal.OVERLOADED);
    assertThat(get(w3).refusal()).isEqualTo(Refusal.OVERLOADED);
    assertThat(get(w3).waitedNanos()).isGreaterThanOrEqualTo(Duration.ofMillis(100).toNanos());
    assertThat(l.stats().refused(Refusal.OVERLOADED)).isEqualTo(2);
    assertThat(l.waiting("k")).isZero();
    // drained: the queue measures afresh, and a newcomer waits and is served as before
    Permit again = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> fresh = l.acquireAsync("k", 1, Duration.ofSeconds(10));
    awaitWaiting(l, "k", 1);
    clock.advance(Duration.ofMillis(1));
    again.close();
    assertThat(get(fresh).isAcquired()).isTrue();
    get(fresh).permit().close();
    assertThat(l.inFlight("k")).isZero();
    assertThatThrownBy(() -> ConcurrencyLimiter.builder().codel(Duration.ofMillis(50),
        Duration.ofMillis(10))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT0.05S").hasMessageContaining("PT0.01S");
  }

  /** An adaptive limit moved by hand, recording what it is told. */
  private static final class Dial implements AdaptiveLimit {
    volatile int limit;
    final int max;
    final List<PermitEnd> told = new CopyOnWriteArrayList<>();

    Dial(int limit) {
      this(limit, Integer.MAX_VALUE);
    }

    Dial(int limit, int max) {
      this.limit = limit;
      this.max = max;
    }

    @Override
    public int limit() {
      return limit;
    }

    @Override
    public int maxLimit() {
      return max;
    }

    @Override
    public void onEnd(PermitEnd end, long nowNanos) {
      told.add(end);
    }
  }

  /**
   * Adaptive limits: each instance sends its own limit as the ceiling of the shared count and
   * learns only from its own permits (docs/concurrency.md says why); a waiter's next ask carries
   * the limit of the moment. In memory, one instance: its limit is the dial's.
   */
  @Test
  public void adaptive_eachInstanceSendsItsOwnLimit_andLearnsFromItsOwnPermits()
      throws Exception {
    Dial wide = new Dial(3);
    Dial narrow = new Dial(1);
    ConcurrencyLimiter a = limiter(b -> b.adaptive(() -> wide));
    Permit first = a.tryAcquire("db").permit();
    if (store == null) {   // in memory: no other instance shares the key
      wide.limit = 1;
      assertThat(a.tryAcquire("db").refusal()).isEqualTo(Refusal.FULL);
      assertThat(a.limit("db")).isEqualTo(1);
      wide.limit = 2;
      Permit second = a.tryAcquire("db").permit();
      first.release(Outcome.DROPPED);
      assertThat(wide.told).extracting(PermitEnd::outcome).containsExactly(Outcome.DROPPED);
      second.close();
      return;
    }
    ConcurrencyLimiter b = limiter(x -> x.adaptive(() -> narrow));
    Acquisition refused = b.tryAcquire("db");
    assertThat(refused.refusal()).as("b's limit is 1 and the shared count is 1")
        .isEqualTo(Refusal.FULL);
    assertThat(refused.limit()).isEqualTo(1);
    Permit second = a.tryAcquire("db").permit();
    Permit third = a.tryAcquire("db").permit();
    assertThat(a.tryAcquire("db").refusal()).isEqualTo(Refusal.FULL);
    assertThat(b.inFlight("db")).isEqualTo(3);
    first.release(Outcome.DROPPED);
    assertThat(wide.told).extracting(PermitEnd::outcome).containsExactly(Outcome.DROPPED);
    assertThat(wide.told.get(0).inFlight()).as("the store's count when it was taken")
        .isEqualTo(1);
    assertThat(narrow.told).as("b learns only from its own permits").isEmpty();
    CompletableFuture<Acquisition> waiting = b.acquireAsync("db", 1, Duration.ofSeconds(5));
    narrow.limit = 4;   // b's limit grows while it waits: its next ask sends the new ceiling
    for (int i = 0; i < 200 && !waiting.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));   // a poll, whose answer comes on another thread
      try {
        waiting.get(20, TimeUnit.MILLISECONDS);
      } catch (TimeoutException notYet) {
        // the next poll
      }
    }
    Acquisition got = get(waiting);
    assertThat(got.isAcquired()).isTrue();
    assertThat(b.inFlight("db")).isEqualTo(3);
    got.permit().close();
    second.close();
    third.close();
    assertThat(a.inFlight("db")).isZero();
  }

  /**
   * An adaptive limit refuses at once a weight above its maximum (TOO_HEAVY) or
   * above its priority's share of the maximum (SHED), as a fixed limit does, instead of queueing
   * what no wait can serve.
   */
  @Test
  public void adaptive_aWeightNoLimitItCanHaveHolds_isRefusedAtOnce() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.adaptive(() -> new Dial(4, 10))
        .share(Priority.SHEDDABLE, 0.5));
    Acquisition heavy = get(l.acquireAsync("k", 11, Priority.NORMAL, Duration.ofSeconds(5)));
    assertThat(heavy.refusal()).isEqualTo(Refusal.TOO_HEAVY);
    assertThat(l.tryAcquire("k", 11).refusal()).isEqualTo(Refusal.TOO_HEAVY);
    Acquisition shed = get(l.acquireAsync("k", 6, Priority.SHEDDABLE, Duration.ofSeconds(5)));
    assertThat(shed.refusal()).as("sheddable's share of the maximum is 5").isEqualTo(Refusal.SHED);
    assertThat(l.waiting("k")).isZero();
    assertThat(l.tryAcquire("k", 4).isAcquired()).as("the key has room for what fits").isTrue();
  }

  /**
   * A waiter whose weight is above the adaptive limit as it is now (it may grow)
   * waits for it to grow, and holds up nobody meanwhile: the weights that fit the limit of now are
   * granted, waiting or not; once the limit has grown to hold it, it is served.
   */
  @Test
  public void adaptive_aWaiterTheLimitCannotHoldYet_holdsUpNobody() throws Exception {
    Dial dial = new Dial(2, 10);
    ConcurrencyLimiter l = limiter(b -> b.adaptive(() -> dial));
    CompletableFuture<Acquisition> heavy = l.acquireAsync("k", 3, Priority.NORMAL,
        Duration.ofSeconds(30));
    awaitWaiting(l, "k", 1);
    Acquisition light = l.tryAcquire("k");
    assertThat(light.isAcquired()).as("a weight of 1 passes a waiter the limit cannot hold: "
        + light).isTrue();
    Acquisition waited = get(l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(5)));
    assertThat(waited.isAcquired()).as(waited.toString()).isTrue();
    assertThat(heavy).isNotDone();
    light.permit().close();
    dial.limit = 3;   // the limit grew (it learns from the permits that end): the heavy one fits
    waited.permit().close();   // once this is back: a release serves the waiters
    for (int i = 0; i < 200 && !heavy.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));   // on a store: a poll, answered on another thread
      try {
        heavy.get(20, TimeUnit.MILLISECONDS);
      } catch (TimeoutException notYet) {
        // the next poll
      }
    }
    Acquisition served = get(heavy);
    assertThat(served.isAcquired()).as(served.toString()).isTrue();
    assertThat(served.permit().weight()).isEqualTo(3);
    served.permit().close();
  }

  /** A permit released by another instance reaches a waiter here (within the poll interval). */
  @Test
  public void aWaiter_seesAReleaseByAnotherInstance() throws Exception {
    List<ConcurrencyLimiter> two = instances(2, b -> b.limit(1));
    Permit held = two.get(0).tryAcquire("k").permit();
    CompletableFuture<Acquisition> waiting = two.get(1).acquireAsync("k", 1, Duration.ofSeconds(5));
    awaitWaiting(two.get(1), "k", 1);
    clock.advance(Duration.ofMillis(30));
    assertThat(waiting).isNotDone();
    held.close();
    for (int i = 0; i < 200 && !waiting.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));   // a poll, whose answer comes on another thread
      try {
        waiting.get(20, TimeUnit.MILLISECONDS);
      } catch (TimeoutException notYet) {
        // the next poll
      }
    }
    assertThat(get(waiting).isAcquired()).isTrue();
  }

  /** Critical waiters are served before sheddable ones that waited longer. */
  @Test
  public void waitersAreServed_highestPriorityFirst() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.limit(1));
    Permit held = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> low = l.acquireAsync("k", 1, Priority.SHEDDABLE,
        Duration.ofSeconds(5));
    awaitWaiting(l, "k", 1);
    clock.advance(Duration.ofMillis(20));
    CompletableFuture<Acquisition> high = l.acquireAsync("k", 1, Priority.CRITICAL,
        Duration.ofSeconds(5));
    awaitWaiting(l, "k", 2);
    clock.advance(Duration.ofMillis(20));
    held.close();
    Acquisition first = get(high);
    assertThat(first.isAcquired()).isTrue();
    assertThat(low).isNotDone();
    first.permit().close();
    assertThat(get(low).isAcquired()).isTrue();
  }

  // ------------------------------------------------------------------------------ groups

  /** Partitions of one database: live is assured 6, batch 4; 10 in all, 4 kept from borrowers. */
  private static ConcurrencyGroup database() {
    return ConcurrencyGroup.sharing(10).assured(key -> key.equals("live") ? 6 : 4).reserve(4);
  }

  /**
   * Worked numbers (docs/concurrency.md): batch takes its 4 assured permits, borrows 2 idle ones
   * up to the borrowing ceiling 10 - 4 = 6, and is refused a third; live still gets 4 (its share
   * within the reserve) and then the group is full.
   */
  @Test
  public void groups_borrowIdlePermits_untilTheReserve_andAssuredSharesStillGetIn() {
    ConcurrencyLimiter l = limiter(b -> b.group(database()));
    for (int i = 1; i <= 4; i++) {
      Acquisition a = l.tryAcquire("batch");
      assertThat(a.isAcquired()).isTrue();
      assertThat(a.isBorrowed()).as("assured permit %d", i).isFalse();
    }
    for (int i = 5; i <= 6; i++) {
      Acquisition a = l.tryAcquire("batch");
      assertThat(a.isAcquired()).isTrue();
      assertThat(a.isBorrowed()).as("borrowed permit %d", i).isTrue();
      assertThat(a.inFlight()).isEqualTo(i);
    }
    Acquisition seventh = l.tryAcquire("batch");
    assertThat(seventh.refusal()).isEqualTo(Refusal.FULL);
    assertThat(seventh.inFlight()).isEqualTo(6);
    for (int i = 1; i <= 4; i++) {
      Acquisition a = l.tryAcquire("live");
      assertThat(a.isAcquired()).as("live's permit %d", i).isTrue();
      assertThat(a.isBorrowed()).isFalse();
    }
    assertThat(l.tryAcquire("live").refusal()).isEqualTo(Refusal.FULL);   // 10 of 10
    assertThat(l.inFlight("batch")).isEqualTo(6);
    assertThat(l.inFlight("live")).isEqualTo(4);
    assertThat(l.limit("live")).isEqualTo(10);   // no limit set: the key may reach the group's
  }

  /** A key's own limit is its ceiling in the group; a weight no rule can ever grant is refused. */
  @Test
  public void groups_keyLimitIsTheCeiling_andAnImpossibleWeightIsTooHeavy() {
    ConcurrencyLimiter l = limiter(b -> b.limit(5).group(database()));
    assertThat(l.tryAcquire("batch", 5).isAcquired()).isTrue();   // 4 assured + 1 borrowed
    assertThat(l.tryAcquire("batch").refusal()).isEqualTo(Refusal.FULL);   // its own 5
    assertThat(l.tryAcquire("live", 6).refusal()).isEqualTo(Refusal.TOO_HEAVY);   // above 5
    ConcurrencyLimiter g = limiter(b -> b.group(database()));
    // above batch's assured 4 and the borrowing ceiling 6: nothing ever grants 7
    assertThat(g.tryAcquire("batch", 7).refusal()).isEqualTo(Refusal.TOO_HEAVY);
  }

  /** Permits of every key count in the group, ended leases of another key come back to it. */
  @Test
  public void groups_endedLeasesOfAnotherKeyComeBack() {
    ConcurrencyLimiter l = limiter(b -> b.group(ConcurrencyGroup.sharing(3).reserve(0))
        .lease(Duration.ofSeconds(1)));
    assertThat(l.tryAcquire("a", 3).isAcquired()).isTrue();   // forgotten by its holder
    assertThat(l.tryAcquire("b").refusal()).isEqualTo(Refusal.FULL);
    clock.advance(Duration.ofSeconds(1));
    Acquisition back = l.tryAcquire("b", 3);
    assertThat(back.isAcquired()).isTrue();
    assertThat(back.isBorrowed()).isTrue();   // no assured share: all of it borrowed
    assertThat(l.inFlight("a")).isZero();
  }

  /** Each group has its own limit: keys of another group are not held up. */
  @Test
  public void groups_areApart() {
    ConcurrencyLimiter l = limiter(b -> b.group(ConcurrencyGroup.sharing(2).reserve(0)
        .by(key -> key.substring(0, key.indexOf('/')))));
    assertThat(l.tryAcquire("t1/a", 2).isAcquired()).isTrue();
    assertThat(l.tryAcquire("t1/b").refusal()).isEqualTo(Refusal.FULL);
    assertThat(l.tryAcquire("t2/a", 2).isAcquired()).isTrue();
  }

  /** A permit that comes back in a group serves a waiter of another key of the group. */
  @Test
  public void groups_aReleaseServesAWaiterOfAnotherKey() throws Exception {
    ConcurrencyLimiter l = limiter(b -> b.group(ConcurrencyGroup.sharing(2).reserve(0)));
    Permit a = l.tryAcquire("a", 2).permit();
    CompletableFuture<Acquisition> b = l.acquireAsync("b", 1, Duration.ofSeconds(5));
    awaitWaiting(l, "b", 1);
    a.release(Outcome.SUCCESS);
    Acquisition got = get(b);
    assertThat(got.isAcquired()).isTrue();
    assertThat(l.inFlight("b")).isEqualTo(1);
  }

  /**
   * Two instances, sixteen threads over four keys of one group (limit 6, reserve 2, each key
   * assured 1, its own limit 4): independent counters never see the group above 6 nor a key
   * above 4, and every permit taken is given back exactly once.
   */
  // ThreadPriorityCheck: a test's spin while other threads run; what it checks does not depend on it
  @SuppressWarnings("ThreadPriorityCheck")
  @Test
  public void groups_neverMoreThanTheGroupsLimit_acrossThreadsAndInstances() throws Exception {
    List<ConcurrencyLimiter> two = instances(2, b -> b.limit(4)
        .group(ConcurrencyGroup.sharing(6).assured(1).reserve(2)));
    String[] keys = {"k0", "k1", "k2", "k3"};
    AtomicInteger group = new AtomicInteger();
    AtomicInteger mostGroup = new AtomicInteger();
    Map<String, AtomicInteger> perKey = Map.of("k0", new AtomicInteger(),
        "k1", new AtomicInteger(), "k2", new AtomicInteger(), "k3", new AtomicInteger());
    AtomicInteger mostKey = new AtomicInteger();
    AtomicLong acquired = new AtomicLong();
    AtomicLong released = new AtomicLong();
    int threads = 16;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      ConcurrencyLimiter l = two.get(t % 2);
      String key = keys[t % keys.length];
      done.add(pool.submit(() -> {
        start.await();
        for (int i = 0; i < 150; i++) {
          Acquisition a = l.tryAcquire(key);
          if (!a.isAcquired()) {
            // full; or, on a busy host, a store call past its timeout, refused closed (the
            // permit it may have taken is cancelled): neither holds anything
            assertThat(a.refusal()).isIn(Refusal.FULL, Refusal.STORE_UNAVAILABLE);
            continue;
          }
          acquired.incrementAndGet();
          mostGroup.accumulateAndGet(group.incrementAndGet(), Math::max);
          mostKey.accumulateAndGet(perKey.get(key).incrementAndGet(), Math::max);
          Thread.yield();
          perKey.get(key).decrementAndGet();
          group.decrementAndGet();
          if (a.permit().release(Outcome.SUCCESS)) {
            released.incrementAndGet();
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(mostGroup.get()).isLessThanOrEqualTo(6);
    assertThat(mostKey.get()).isLessThanOrEqualTo(4);
    assertThat(acquired.get()).isGreaterThan(0);
    assertThat(released.get()).isEqualTo(acquired.get());
    for (String k : keys) {
      assertThat(two.get(0).inFlight(k)).isZero();
    }
  }

  /** Bad group settings are named when given. */
  @Test
  public void groups_badSettingsAreNamed() {
    assertThatThrownBy(() -> ConcurrencyGroup.sharing(0))
        .hasMessageContaining("a group's limit must be at least 1 but was 0");
    assertThatThrownBy(() -> ConcurrencyGroup.sharing(4).reserve(5))
        .hasMessageContaining("reserve must be between 0 and the group's limit 4 but was 5");
    assertThatThrownBy(() -> ConcurrencyGroup.sharing(4).assured(5))
        .hasMessageContaining("assured must be between 0 and the group's limit 4 but was 5");
    ConcurrencyLimiter l = limiter(b -> b.group(ConcurrencyGroup.sharing(4).assured(key -> 9)));
    assertThatThrownBy(() -> l.tryAcquire("k"))
        .hasMessageContaining("the assured share of key 'k' must be between 0 and the group's"
            + " limit 4 but was 9");
    // a key its group function cannot place is the caller's error, named, and no store failure
    ConcurrencyLimiter byPrefix = limiter(b -> b.group(ConcurrencyGroup.sharing(4).byPrefix("/")));
    for (int i = 0; i < 10; i++) {
      assertThatThrownBy(() -> byPrefix.tryAcquire("nogroup"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("key 'nogroup' has no group");
      assertThatThrownBy(() -> byPrefix.acquireAsync("nogroup", 1, Duration.ofSeconds(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("key 'nogroup' has no group");
    }
    assertThat(byPrefix.stats().storeErrors()).isZero();
    assertThat(byPrefix.tryAcquire("acme/live").isAcquired()).as("no breaker opened").isTrue();
  }

  // ------------------------------------------------------------------------------ the store's calls

  /** The store under test, called directly (in memory: the reference store, the contract). */
  private PermitStore rawStore() {
    PermitStore made = factory().create(clock);
    return made != null ? made : new ReferencePermitStore(clock);
  }

  /**
   * A resent acquire (the same id: a retry after a lost answer) finds its permit held and takes
   * nothing twice, even when the key is full; its release ends it once.
   */
  @Test
  public void store_aResentAcquireTakesNothingTwice() {
    PermitStore s = rawStore();
    assertThat(s.acquire("k", "p1", 1, 2, 10_000).done()).isTrue();
    PermitReply again = s.acquire("k", "p1", 1, 2, 10_000);
    assertThat(again.done()).isTrue();
    assertThat(again.inFlight()).isEqualTo(1);
    assertThat(s.acquire("k", "p2", 1, 2, 10_000).inFlight()).isEqualTo(2);
    assertThat(s.acquire("k", "p2", 1, 2, 10_000).done()).as("full, but p2 is held").isTrue();
    assertThat(s.acquire("k", "p3", 1, 2, 10_000).done()).isFalse();
    assertThat(s.acquire("k", "w", 3, 10, 10_000).inFlight()).isEqualTo(5);
    assertThat(s.acquire("k", "w", 3, 10, 10_000).inFlight()).as("w counted once").isEqualTo(5);
    assertThat(s.release("k", "p1", 1).done()).isTrue();
    assertThat(s.release("k", "p1", 1).done()).isFalse();
    assertThat(s.inFlight("k")).isEqualTo(4);
  }

  /** The same for a key of a group: the group counts the permit once. */
  @Test
  public void store_grouped_aResentAcquireTakesNothingTwice_andLeasesEnd() {
    PermitStore s = rawStore();
    PermitGroup terms = new PermitGroup("g", 3, 3, 0);
    assertThat(s.acquire(terms, "a", "p1", 2, 3, 1_000).done()).isTrue();
    assertThat(s.acquire(terms, "a", "p1", 2, 3, 1_000).done()).isTrue();
    assertThat(s.inFlight("g", null)).isEqualTo(2);
    assertThat(s.acquire(terms, "b", "p1", 2, 3, 1_000).done()).as("group 2 + 2 > 3").isFalse();
    assertThat(s.acquire(terms, "b", "p1", 1, 3, 1_000).done()).isTrue();
    clock.advance(Duration.ofMillis(600));
    assertThat(s.renew("g", "b", "p1", 1, 1_000).done()).isTrue();   // b's until 1.6 s
    clock.advance(Duration.ofMillis(400));   // a's lease ended at 1 s
    assertThat(s.release("g", "a", "p1", 2).done()).as("ended: nothing to release").isFalse();
    assertThat(s.inFlight("g", null)).isEqualTo(1);
    assertThat(s.release("g", "b", "p1", 1).done()).isTrue();
    assertThat(s.inFlight("g", null)).isZero();
  }

  // ------------------------------------------------------------------------------ cancel

  /**
   * A cancel that reaches the store before its acquire (the acquire was delayed: a paused server,
   * a connection stuck behind a lock) makes that acquire take nothing until the cancel's lease
   * ends; the id weighs nothing meanwhile, and renewing or releasing it does nothing.
   */
  @Test
  public void store_aCancelBeforeItsAcquire_makesTheAcquireTakeNothing() {
    PermitStore s = rawStore();
    PermitReply cancelled = s.cancel("k", "late", 2, 1_000);
    assertThat(cancelled.done()).as("nothing was held").isFalse();
    assertThat(cancelled.inFlight()).isZero();
    PermitReply late = s.acquire("k", "late", 2, 5, 30_000);
    assertThat(late.done()).as("the acquire came after its cancel").isFalse();
    assertThat(late.inFlight()).isZero();
    assertThat(s.acquire("k", "other", 1, 1, 30_000).done())
        .as("a cancelled id weighs nothing against the ceiling").isTrue();
    assertThat(s.renew("k", "late", 2, 30_000).done()).isFalse();
    assertThat(s.release("k", "late", 2).done()).isFalse();
    assertThat(s.acquire("k", "late", 2, 5, 30_000).done()).as("still cancelled").isFalse();
    assertThat(s.inFlight("k")).isEqualTo(1);
    clock.advance(Duration.ofSeconds(1));
    assertThat(s.acquire("k", "late", 2, 5, 30_000).done())
        .as("the cancel is forgotten once its lease has passed").isTrue();
    assertThat(s.inFlight("k")).isEqualTo(3);
  }

  /**
   * A cancel that reaches the store after its acquire gives the permit back at once, and the id
   * then takes nothing (a second copy of the acquire, if any, is refused); cancelling again is
   * harmless.
   */
  @Test
  public void store_aCancelAfterItsAcquire_givesThePermitBack() {
    PermitStore s = rawStore();
    assertThat(s.acquire("k", "lost", 3, 3, 30_000).done()).isTrue();
    assertThat(s.acquire("k", "other", 1, 3, 30_000).done()).as("full").isFalse();
    PermitReply cancelled = s.cancel("k", "lost", 3, 30_000);
    assertThat(cancelled.done()).as("it was held").isTrue();
    assertThat(cancelled.inFlight()).isZero();
    assertThat(s.inFlight("k")).isZero();
    assertThat(s.acquire("k", "lost", 3, 3, 30_000).done()).as("a second copy").isFalse();
    assertThat(s.cancel("k", "lost", 3, 30_000).done()).isFalse();
    assertThat(s.acquire("k", "other", 3, 3, 30_000).done()).isTrue();
    assertThat(s.inFlight("k")).isEqualTo(3);
  }

  /** The same in a group: the cancelled permit leaves the key and the group, in either order. */
  @Test
  public void store_grouped_aCancelGivesThePermitBack_inEitherOrder() {
    PermitStore s = rawStore();
    PermitGroup terms = new PermitGroup("g", 4, 4, 0);
    assertThat(s.acquire(terms, "a", "lost", 3, 4, 30_000).done()).isTrue();
    assertThat(s.cancel("g", "a", "lost", 3, 30_000).done()).isTrue();
    assertThat(s.inFlight("g", null)).isZero();
    assertThat(s.cancel("g", "b", "late", 2, 1_000).done()).isFalse();
    assertThat(s.acquire(terms, "b", "late", 2, 4, 30_000).done()).isFalse();
    assertThat(s.acquire(terms, "b", "other", 4, 4, 30_000).done())
        .as("cancelled ids weigh nothing in the group").isTrue();
    assertThat(s.inFlight("g", "b")).isEqualTo(4);
    assertThat(s.inFlight("g", null)).isEqualTo(4);
  }

  /**
   * A store that runs each acquire and then loses its answer (a timeout after the store granted):
   * the limiter refuses (failing closed), and gives the permit back through the store's cancel,
   * so that no permit is held by nobody; the breaker, told by the cancel that the store answers,
   * lets the next call through.
   */
  @Test
  public void anAcquireWhoseAnswerIsLost_isGivenBack() throws Exception {
    PermitStore real = rawStore();
    AtomicInteger lose = new AtomicInteger(3);
    PermitStore losing = new LosingAnswers(real, lose);
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().clock(clock).scheduler(clock)
        .limit(2).store(losing).build();
    made.add(l);
    for (int i = 0; i < 3; i++) {
      Acquisition a = l.tryAcquire("k");
      assertThat(a.refusal()).isEqualTo(Refusal.STORE_UNAVAILABLE);
    }
    awaitStore(real, "k", 0);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (l.stats().circuitOpen() && System.nanoTime() < end) {
      Thread.sleep(1);   // the cancels' answers are handled on another thread
    }
    assertThat(l.stats().circuitOpen()).as("the cancels' answers closed the breaker").isFalse();
    Acquisition a = l.tryAcquire("k");
    assertThat(a.isAcquired()).as(a.toString()).isTrue();
    assertThat(l.tryAcquire("k").isAcquired()).as("the limit of 2 is whole").isTrue();
    assertThat(real.inFlight("k")).isEqualTo(2);
  }

  /** The same through a waiting acquisition, whose store calls are asynchronous. */
  @Test
  public void aWaitersAcquireWhoseAnswerIsLost_isGivenBack() throws Exception {
    PermitStore real = rawStore();
    AtomicInteger lose = new AtomicInteger(1);
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().clock(clock).scheduler(clock)
        .limit(1).store(new LosingAnswers(real, lose)).build();
    made.add(l);
    Acquisition a = get(l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(1)));
    assertThat(a.refusal()).isEqualTo(Refusal.STORE_UNAVAILABLE);
    awaitStore(real, "k", 0);
    assertThat(get(l.acquireAsync("k", 1, Priority.NORMAL, Duration.ofSeconds(1))).isAcquired())
        .isTrue();
  }

  private static void awaitStore(PermitStore s, String key, int inFlight)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (s.inFlight(key) != inFlight && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertThat(s.inFlight(key)).as("the store's weight in flight on " + key).isEqualTo(inFlight);
  }

  /** A store that runs the first {@code lose} acquires and then throws, as a timeout would. */
  private static final class LosingAnswers implements PermitStore {
    private final PermitStore store;
    private final AtomicInteger lose;

    LosingAnswers(PermitStore store, AtomicInteger lose) {
      this.store = store;
      this.lose = lose;
    }

    @Override
    public PermitReply acquire(String key, String permitId, int weight, int ceiling,
        long leaseMillis) {
      PermitReply r = store.acquire(key, permitId, weight, ceiling, leaseMillis);
      if (lose.getAndDecrement() > 0) {
        throw new StoreUnavailableException("the answer was lost", null);
      }
      return r;
    }

    @Override
    public PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
      return store.renew(key, permitId, weight, leaseMillis);
    }

    @Override
    public PermitReply release(String key, String permitId, int weight) {
      return store.release(key, permitId, weight);
    }

    @Override
    public PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
      return store.cancel(key, permitId, weight, leaseMillis);
    }

    @Override
    public int inFlight(String key) {
      return store.inFlight(key);
    }

    @Override
    public void resetPermits(String key) {
      store.resetPermits(key);
    }
  }
}

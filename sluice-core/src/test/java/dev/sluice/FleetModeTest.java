package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Fleet mode (issue 13): hot keys answered from leases, with the bound of docs/fleet.md. */
class FleetModeTest {
  private static final long MS = 1_000_000;
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();
  private final ManualScheduler scheduler = new ManualScheduler();
  private final Limit limit = Limit.leakyBucket(1000, Rate.perSecond(1000));
  private final InProcessStore store = new InProcessStore(List.of(limit), clock);
  /** Cap per instance: min(1000, 10% of 1000/s, 200 ms of 1000/s) = 100 units. */
  private final LeaseSettings tenPercent = LeaseSettings.defaults().withExcessShare(0.1);

  private RateLimiter fleet(LeaseSettings settings) {
    return fleet(settings, StoreFailure.FAIL_CLOSED);
  }

  private RateLimiter fleet(LeaseSettings settings, StoreFailure policy) {
    return Sluice.builder().limit(limit).store(store).clock(clock).scheduler(scheduler)
        .onStoreFailure(policy).leases(settings).build();
  }

  /** Requests every {@code gapMicros} for {@code millis}; returns how many were admitted. */
  private int drive(RateLimiter l, String key, long gapMicros, long millis) {
    int admitted = 0;
    for (long t = 0; t < millis * 1000; t += gapMicros) {
      clock.now.addAndGet(gapMicros * 1000);
      admitted += l.tryAcquire(key).isAllowed() ? 1 : 0;
    }
    return admitted;
  }

  @Test
  void hotKey_isAnsweredFromItsLease_withoutAStoreCallPerDecision() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "hot", 500, 120);   // 2,000/s: hot after the first demand sample (L/4 = 50 ms)
    int before = store.calls.get();
    int leased = 0;
    for (int i = 0; i < 400; i++) {
      clock.now.addAndGet(500_000);
      Decision d = l.tryAcquire("hot");
      assertThat(d.isAllowed()).isTrue();
      leased += d.isLeased() ? 1 : 0;
    }
    assertThat(leased).isEqualTo(400);
    // the target is min(cap 100, 100 ms of demand = 200) = 100 units, refilled below 50: about
    // one lease call per 50 decisions
    assertThat(store.calls.get() - before).isBetween(6, 10);
    LeaseStats s = l.stats().leases();
    assertThat(s.unitsSpent()).isGreaterThanOrEqualTo(400);
    assertThat(s.unitsHeld()).isBetween(1L, 100L);
    assertThat(s.keysLeased()).isEqualTo(1);
  }

  @Test
  void coldKey_isDecidedByTheStore_oneCallEach_exactly() {
    RateLimiter l = fleet(tenPercent);
    int before = store.calls.get();
    for (int i = 0; i < 50; i++) {
      clock.now.addAndGet(100 * MS);   // 10/s: half a lifetime of demand is 1 unit, below a lease
      Decision d = l.tryAcquire("cold");
      assertThat(d.isAllowed()).isTrue();
      assertThat(d.isLeased()).isFalse();
    }
    assertThat(store.calls.get() - before).isEqualTo(50);
    assertThat(store.leaseCalls.get()).isZero();
  }

  @Test
  void fleet_neverAdmitsMoreThanTheStoreCharged_andStaysWithinTheBoundInEveryWindow() {
    // Five instances, skewed 5:1:1:1:1, offered 3x the rate for 5 s. Capacity 20 at 1,000/s,
    // share 10%: the fleet may hold min(20, 100, 200) = 20 units, 4 per instance.
    Limit small = Limit.leakyBucket(20, Rate.perSecond(1000));
    InProcessStore shared = new InProcessStore(List.of(small), clock);
    int n = 5;
    List<RateLimiter> fleet = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      fleet.add(Sluice.builder().limit(small).store(shared).clock(clock).scheduler(scheduler)
          .leases(LeaseSettings.defaults().withExcessShare(0.1).withInstances(n)).build());
    }
    RateLimiter oracle = Sluice.builder().limit(small).clock(clock).build();
    Random random = new Random(13);
    int[] weights = {5, 1, 1, 1, 1};
    List<long[]> admittedAt = new ArrayList<>();
    long oracleAdmitted = 0;
    long start = clock.now.get();
    long end = start + 5_000 * MS;
    while (clock.now.get() < end) {
      clock.now.addAndGet((long) (-Math.log(1 - random.nextDouble()) / 3000 * 1e9));
      int pick = random.nextInt(9);
      int instance = 0;
      for (int w = weights[0]; pick >= w; w += weights[++instance]) {
        // walk the weights
      }
      if (fleet.get(instance).tryAcquire("api").isAllowed()) {
        admittedAt.add(new long[] {clock.now.get()});
      }
      oracleAdmitted += oracle.tryAcquire("api").isAllowed() ? 1 : 0;
      if (random.nextInt(500) == 0) {
        scheduler.runAll();
      }
    }
    double elapsed = (clock.now.get() - start) / 1e9;
    assertThat((double) admittedAt.size()).as("in the long run: no more than the limit")
        .isLessThanOrEqualTo(20 + 1000 * elapsed);
    long bound = 20;   // what the instances hold together, at most
    for (long window : new long[] {10 * MS, 100 * MS, 1000 * MS}) {
      int from = 0;
      for (int to = 0; to < admittedAt.size(); to++) {
        while (admittedAt.get(to)[0] - admittedAt.get(from)[0] > window) {
          from++;
        }
        double exactMost = 20 + 1000 * (window / 1e9);
        assertThat((double) (to - from + 1)).as("admitted within %d ms", window / MS)
            .isLessThanOrEqualTo(exactMost + bound);
      }
    }
    assertThat((double) admittedAt.size()).as("and not much less than an exact limiter")
        .isGreaterThanOrEqualTo(0.9 * oracleAdmitted);
    long granted = 0;
    long local = 0;
    for (RateLimiter l : fleet) {
      l.close();
      LeaseStats s = l.stats().leases();
      assertThat(s.unitsHeld()).isZero();
      assertThat(s.unitsGranted()).as("every granted unit was spent or given back")
          .isEqualTo((long) s.unitsSpent() + s.unitsReturned());
      granted += s.unitsGranted();
      local += (long) s.unitsSpent();
    }
    assertThat(local).as("most decisions were local").isGreaterThan(admittedAt.size() / 2);
    assertThat(granted).isPositive();
  }

  /** Two keys at 2,000/s each, interleaved: their buckets fill at 1,000/s net. */
  private void driveBoth(RateLimiter l, String a, String b, long millis) {
    for (long t = 0; t < millis * 1000; t += 500) {
      clock.now.addAndGet(250_000);
      l.tryAcquire(a);
      clock.now.addAndGet(250_000);
      l.tryAcquire(b);
    }
  }

  @Test
  void expiredLease_isGivenBack_andTheSharedBucketFallsByExactlyWhatWasHeld() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 600);   // the bucket fills at a net 1,000/s: ~600 units
    long held = l.stats().leases().unitsHeld();
    assertThat(held).isPositive();
    clock.now.addAndGet(250 * MS);   // past the lifetime, no requests
    double before = store.level("k");
    scheduler.runAll();
    assertThat(before - store.level("k")).isEqualTo((double) held);
    LeaseStats s = l.stats().leases();
    assertThat(s.unitsHeld()).isZero();
    assertThat(s.unitsReturned()).isEqualTo(held);
    assertThat(s.unitsGranted()).isEqualTo((long) s.unitsSpent() + s.unitsReturned());
  }

  @Test
  void close_givesBackEveryLease_andLaterDecisionsGoToTheStore() {
    RateLimiter l = fleet(tenPercent);
    driveBoth(l, "a", "b", 600);
    long held = l.stats().leases().unitsHeld();
    double before = store.level("a") + store.level("b");
    l.close();
    assertThat(before - store.level("a") - store.level("b")).isEqualTo((double) held);
    assertThat(l.stats().leases().unitsHeld()).isZero();
    int calls = store.calls.get();
    Decision d = l.tryAcquire("a");
    assertThat(d.isLeased()).isFalse();
    assertThat(store.calls.get()).isEqualTo(calls + 1);
    l.close();   // idempotent
  }

  @Test
  void emptyLease_withRoomInTheSharedBucket_asksTheStore_oneCallAtATime_thenIsRefilled()
      throws Exception {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);
    store.holdAsync = true;   // the refill, and the store decision, stay in flight
    int calls = store.calls.get();
    int admitted = 0;
    List<java.util.concurrent.CompletableFuture<Decision>> pending = new ArrayList<>();
    Decision last = null;
    for (int i = 0; i < 200; i++) {
      clock.now.addAndGet(10_000);   // 100,000/s, all at once: the lease runs dry
      java.util.concurrent.CompletableFuture<Decision> f = l.tryAcquireAsync("k", 1);
      if (!f.isDone()) {
        pending.add(f);
        continue;
      }
      last = f.get();
      admitted += last.isAllowed() ? 1 : 0;
    }
    assertThat(store.calls.get()).as("no request waited for the store").isEqualTo(calls);
    assertThat(pending).as("one store decision at a time while the lease is empty").hasSize(1);
    assertThat(admitted).isBetween(1, 100);
    assertThat(last.isAllowed()).isFalse();
    assertThat(last.isLeased()).isTrue();
    assertThat(last.retryAfterNanos()).isPositive();
    assertThat(l.stats().leases().localRejections()).isEqualTo(199 - admitted);
    assertThat(store.runHeld()).as("the refill and the one store decision").isEqualTo(2);
    assertThat(pending.get(0).get().isAllowed()).as("the shared bucket had room").isTrue();
    assertThat(pending.get(0).get().isLeased()).isFalse();
    assertThat(l.tryAcquire("k").isLeased()).as("refilled").isTrue();
  }

  @Test
  void leaseCalls_areTimed_fromSendingToTheAnswer() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);   // hot and leased; the store answers at once on this clock
    LeaseStats before = l.stats().leases();
    assertThat(before.leaseCalls()).isPositive();
    assertThat(before.leaseCallNanos()).isZero();
    store.holdAsync = true;
    for (int i = 0; i < 200 && store.heldCount() == 0; i++) {
      clock.now.addAndGet(10_000);
      l.tryAcquireAsync("k", 1);
    }
    assertThat(store.heldCount()).as("a refill in flight").isEqualTo(1);
    clock.now.addAndGet(7 * MS);
    store.runHeld();
    LeaseStats after = l.stats().leases();
    assertThat(after.leaseCalls()).isEqualTo(before.leaseCalls() + 1);
    assertThat(after.leaseCallNanos()).as("the one refill took 7 ms").isEqualTo(7 * MS);
    assertThat(after.meanLeaseCallNanos()).isEqualTo(7.0 * MS / after.leaseCalls());
    assertThat(LeaseStats.NONE.meanLeaseCallNanos()).isZero();
  }

  @Test
  void emptyLease_whenTheSharedBucketIsFull_isRejectedLocally_withoutAStoreCall() {
    Limit small = Limit.leakyBucket(100, Rate.perSecond(1000));
    InProcessStore shared = new InProcessStore(List.of(small), clock);
    RateLimiter l = Sluice.builder().limit(small).store(shared).clock(clock).scheduler(scheduler)
        .leases(tenPercent).build();
    for (int i = 0; i < 4000; i++) {   // 10,000/s for 0.4 s against 1,000/s: the bucket is full
      clock.now.addAndGet(100_000);
      l.tryAcquire("k");
    }
    int calls = shared.calls.get();
    int rejectedLocally = 0;
    for (int i = 0; i < 100; i++) {   // 1 ms: at most one paced refill
      clock.now.addAndGet(10_000);
      Decision d = l.tryAcquire("k");
      assertThat(d.isLeased()).as("answered locally: from the lease, or rejected").isTrue();
      rejectedLocally += d.isAllowed() ? 0 : 1;
    }
    assertThat(rejectedLocally).isPositive();
    assertThat(shared.calls.get() - calls).as("a paced refill at most, no call per decision")
        .isLessThanOrEqualTo(2);
  }

  @Test
  void check_isAnsweredFromTheLease_andChangesNothing_whileFillUpAndReserveGoToTheStore() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);
    long held = l.stats().leases().unitsHeld();
    int calls = store.calls.get();
    Decision c = l.check("k", 1);
    assertThat(c.isAllowed()).isTrue();
    assertThat(c.isLeased()).isTrue();
    assertThat(store.calls.get()).as("a check from the lease calls nothing, not even a refill")
        .isEqualTo(calls);
    Decision more = l.check("k", held + 1);
    assertThat(more.isAllowed()).as("more than is held, and the shared bucket has room: the"
        + " store's exact answer").isTrue();
    assertThat(more.isLeased()).isFalse();
    assertThat(l.stats().leases().unitsHeld()).isEqualTo(held);
    assertThat(store.calls.get()).isEqualTo(calls + 1);
    double level = store.level("k");
    l.check("k", held + 1);
    assertThat(store.level("k")).as("a check changes nothing").isEqualTo(level);
    assertThat(l.fillUp("k", 1).isLeased()).isFalse();
    assertThat(l.reserve("k", 1).isLeased()).isFalse();
    assertThat(store.calls.get()).isEqualTo(calls + 4);
  }

  @Test
  void reset_forgetsTheKeyInTheStore_andDropsItsLeaseWithoutARelease() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);
    assertThat(l.stats().leases().unitsHeld()).isPositive();
    int calls = store.leaseCalls.get();
    l.reset("k");
    assertThat(store.level("k")).isZero();
    assertThat(l.stats().leases().unitsHeld()).isZero();
    assertThat(store.leaseCalls.get()).as("nothing to give back: the store forgot it").isEqualTo(calls);
    assertThat(l.stats().leases().keysLeased()).isZero();
  }

  @Test
  void fractionalCosts_areSpentExactly_fromWholeUnitsLeased() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);
    store.holdAsync = true;   // no refill lands: spend what is held
    long held = l.stats().leases().unitsHeld();
    int admitted = 0;
    Decision d;
    while ((d = l.tryAcquire("k", 0.1)).isAllowed() && d.isLeased()) {
      admitted++;
    }
    assertThat(admitted).isEqualTo((int) (held * 10));
  }

  @Test
  void storeDown_leaseIsSpent_thenFailClosed() {
    RateLimiter l = fleet(tenPercent);
    drive(l, "k", 500, 120);
    long held = l.stats().leases().unitsHeld();
    store.down = true;
    int admitted = 0;
    int degraded = 0;
    for (int i = 0; i < 2000; i++) {   // 1 s at 2,000/s
      clock.now.addAndGet(500_000);
      Decision d = l.tryAcquire("k");
      admitted += d.isAllowed() ? 1 : 0;
      degraded += d.isDegraded() ? 1 : 0;
    }
    assertThat(admitted).as("no more than was held when the store went down")
        .isLessThanOrEqualTo((int) held).isPositive();
    assertThat(degraded).isGreaterThan(1500);
    store.down = false;
    clock.now.addAndGet(2000 * MS);   // the breaker lets a trial through
    assertThat(drive(l, "k", 500, 200)).as("recovers").isGreaterThan(300);
  }

  @Test
  void storeDown_localShare_decidesAtRateOverN() {
    RateLimiter l = fleet(tenPercent.withInstances(4), StoreFailure.LOCAL_SHARE);
    // cap per instance 100/4 = 25
    drive(l, "k", 500, 120);
    long held = l.stats().leases().unitsHeld();
    store.down = true;
    int admitted = drive(l, "k", 500, 2000);   // 2 s at 2,000/s
    // the lease held, then this instance's share: 250/s for 2 s; the share starts full (the
    // shared level is unknown), so no burst of its capacity 1000/4 on top
    assertThat((double) admitted).isLessThanOrEqualTo(held + 250 * 2.0 + 1)
        .isGreaterThanOrEqualTo(250 * 2.0 * 0.95);
    assertThat(l.stats().degradedDecisions()).isPositive();
    // back: what the share admitted is charged to the shared bucket, as far as it has room
    store.down = false;
    clock.now.addAndGet(1000 * MS);   // the breaker lets a trial through; the bucket drained
    assertThat(store.level("k")).isZero();
    l.tryAcquire("k");
    long reconciled = l.stats().leases().unitsReconciled();
    assertThat(reconciled).isEqualTo(Math.min(1000, admitted - held));
    assertThat(store.level("k")).isGreaterThanOrEqualTo((double) reconciled);
  }

  @Test
  void manyThreadsOnManyInstances_admitExactlyWhatTheStoreCharged() throws Exception {
    Limit tight = Limit.leakyBucket(500, Rate.perSecond(1000));
    InProcessStore shared = new InProcessStore(List.of(tight), clock);
    int n = 4;
    List<RateLimiter> fleet = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      fleet.add(Sluice.builder().limit(tight).store(shared).clock(clock).scheduler(scheduler)
          .leases(LeaseSettings.defaults().withExcessShare(0.2).withInstances(n)).build());
    }
    // warm up: make the key hot everywhere
    for (int i = 0; i < 400; i++) {
      clock.now.addAndGet(MS / 4);
      fleet.get(i % n).tryAcquire("k");
    }
    long start = clock.now.get();
    AtomicLong admitted = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      RateLimiter l = fleet.get(t % n);
      done.add(pool.submit(() -> {
        go.await();
        for (int i = 0; i < 5000; i++) {
          if (i % 50 == 0) {
            clock.now.addAndGet(MS / 10);
          }
          if (l.tryAcquire("k").isAllowed()) {
            admitted.incrementAndGet();
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
    double elapsed = (clock.now.get() - start) / 1e9;
    assertThat((double) admitted.get()).isLessThanOrEqualTo(500 + 1000 * elapsed);
    for (RateLimiter l : fleet) {
      long heldBefore = l.stats().leases().unitsHeld();
      l.close();
      LeaseStats s = l.stats().leases();
      assertThat(s.unitsGranted()).isEqualTo((long) s.unitsSpent() + s.unitsReturned());
      assertThat(s.unitsReturned()).isGreaterThanOrEqualTo(heldBefore);
    }
  }

  @Test
  void aFloodOfNewKeys_fromManyThreads_neverHoldsMoreRecordsThanTheBound() throws Exception {
    RateLimiter l = fleet(tenPercent.withMaximumKeys(100));
    ExecutorService pool = Executors.newFixedThreadPool(16);
    AtomicLong most = new AtomicLong();
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int id = t;
      done.add(pool.submit(() -> {
        for (int i = 0; i < 2000; i++) {
          assertThat(l.tryAcquire("flood:" + id + ":" + i).isAllowed()).isTrue();
          most.accumulateAndGet(l.stats().leases().keysLeased(), Math::max);
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(most.get()).isLessThanOrEqualTo(100);
    assertThat(l.stats().leases().keysLeased()).isEqualTo(100);
    clock.now.addAndGet(1000 * MS);   // idle for more than 4 lifetimes: the sweep forgets them
    scheduler.runAll();
    assertThat(l.stats().leases().keysLeased()).isZero();
    assertThat(l.tryAcquire("after").isAllowed()).as("room again").isTrue();
    assertThat(l.stats().leases().keysLeased()).isEqualTo(1);
  }

  @Test
  void theFleetIsNamedByEveryFigureOfItsLimits() {
    Limit a = Limit.leakyBucket(10, Rate.perSecond(5)).named("api");
    assertThat(FleetMembership.fleetOf(List.of(a)))
        .isEqualTo(FleetMembership.fleetOf(List.of(Limit.leakyBucket(10, Rate.perSecond(5)).named("api"))))
        .as("same name, other rate: another fleet")
        .isNotEqualTo(FleetMembership.fleetOf(List.of(Limit.leakyBucket(10, Rate.perSecond(6)).named("api"))))
        .startsWith("limits-").hasSize("limits-".length() + 16);
  }

  @Test
  void settingsThatCannotWork_areRefusedWithTheReason() {
    assertThatThrownBy(() -> Sluice.builder().limit(limit).leases(LeaseSettings.defaults()).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("leases applies to a limiter on a shared store");
    assertThatThrownBy(() -> Sluice.builder().limit(Limit.fixedWindow(100, Duration.ofSeconds(1)))
        .store(store).leases(LeaseSettings.defaults()).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("fleet mode needs buckets");
    assertThatThrownBy(() -> Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(10)))
        .store(store).leases(LeaseSettings.defaults()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leases would hold 0.1 units per instance");
    assertThatThrownBy(() -> Sluice.builder().limit(limit).store(store)
        .onStoreFailure(StoreFailure.LOCAL_SHARE).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no leases(...) was given");
    assertThatThrownBy(() -> LeaseSettings.defaults().withExcessShare(0))
        .hasMessage("lease excessShare must be in (0, 1] but was 0.0");
    assertThatThrownBy(() -> LeaseSettings.defaults().withInstances(0))
        .hasMessage("lease instances must be at least 1 but was 0");
    assertThatThrownBy(() -> LeaseSettings.defaults().withLifetime(Duration.ofSeconds(61)))
        .hasMessage("lease lifetime must be between 1ms and 1m but was PT1M1S");
    assertThatThrownBy(() -> LeaseSettings.defaults().withFleet(" "))
        .hasMessage("lease fleet name must be 1 to 200 characters, not blank, but was ' '");
    assertThatThrownBy(() -> LeaseSettings.defaults().withMaximumKeys(0))
        .hasMessage("lease maximumKeys must be at least 1 but was 0");
    assertThat(LeaseSettings.defaults().withFleet("orders").fleet()).isEqualTo("orders");
    assertThat(LeaseSettings.defaults().toString())
        .isEqualTo("LeaseSettings[lifetime 200ms, excess share 1%, 1 instances, 10000 keys]");
    assertThatThrownBy(() -> Sluice.builder().leases(LeaseSettings.defaults()).leases(LeaseSettings.defaults()))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("leases was already set");
  }
}

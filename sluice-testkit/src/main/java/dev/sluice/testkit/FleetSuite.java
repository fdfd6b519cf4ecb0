package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.LeaseSettings;
import dev.sluice.LeaseStats;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.spi.DecisionStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fleet mode on a real store: eight limiter instances, each with its own store and
 * connection, share one hot key on the store's clock for three seconds, with even and with 5:1
 * skewed traffic (threads per instance) at about 15 times the limit. The fleet admits no more than the limit over the
 * run plus the bound (what the instances may hold together), most decisions are local, every
 * lease is given back on close, and the key keeps an expiry. A store module extends this class.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class FleetSuite {
  /** For a store's test class, which extends this one. */
  protected FleetSuite() {}

  /** Instances sharing the key. */
  protected static final int INSTANCES = 8;
  /** Capacity 200 at 2,000/s; share 10%: the fleet holds at most min(200, 200, 400) = 200. */
  private static final Limit LIMIT = Limit.leakyBucket(200, Rate.perSecond(2000));
  private static final long BOUND = 200;

  private final List<DecisionStore> stores = new ArrayList<>();

  /** A new store with its own connection to the shared server, keys under {@code prefix}. */
  protected abstract DecisionStore newStore(String prefix);

  /** Whether the key's state in the store will expire by itself (or is already gone). */
  protected abstract boolean expires(DecisionStore store, String key);

  @AfterEach
  void closeStores() {
    for (DecisionStore s : stores) {
      s.close();
    }
  }

  @Test
  public void evenTraffic_admitsWithinTheBound_andGivesEveryLeaseBack() throws Exception {
    run(new int[] {2, 2, 2, 2, 2, 2, 2, 2});
  }

  @Test
  public void skewedTraffic_fiveToOne_admitsWithinTheBound_andGivesEveryLeaseBack() throws Exception {
    run(new int[] {5, 1, 1, 1, 1, 1, 1, 1});
  }

  @Test
  public void storeCountsLiveInstances_andTheCapsFollowIt() throws Exception {
    String prefix = "count:" + System.nanoTime() + ":";
    DecisionStore direct = newStore(prefix);
    stores.add(direct);
    assertThat(direct.liveInstances("f", "a", 5000).get(10, TimeUnit.SECONDS)).isEqualTo(1);
    assertThat(direct.liveInstances("f", "b", 5000).get(10, TimeUnit.SECONDS)).isEqualTo(2);
    assertThat(direct.liveInstances("f", "a", 5000).get(10, TimeUnit.SECONDS))
        .as("an instance counts once").isEqualTo(2);
    assertThat(direct.liveInstances("other", "a", 5000).get(10, TimeUnit.SECONDS))
        .as("fleets count apart").isEqualTo(1);
    // three limiters told nothing of one another: the store's count reaches each of them
    List<RateLimiter> fleet = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      DecisionStore store = newStore(prefix);
      stores.add(store);
      fleet.add(Sluice.builder().limit(LIMIT).store(store)
          .leases(LeaseSettings.defaults().withExcessShare(0.1)).build());
    }
    assertThat(waitFor(() -> fleet.stream().allMatch(l -> l.stats().leases().instances() == 3)))
        .as("every instance sees three").isTrue();
    fleet.get(2).close();   // stops its heartbeat: it expires from the count after 1 s
    assertThat(waitFor(() -> fleet.get(0).stats().leases().instances() == 2
        && fleet.get(1).stats().leases().instances() == 2)).as("and then two").isTrue();
    fleet.get(0).close();
    fleet.get(1).close();
  }

  /** Polls a real store's state for up to 10 s (waiting for it, not timing the test). */
  private static boolean waitFor(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }

  private static double quantile(List<Long> values, double q) {
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    assertThat(sorted).as("round trips measured").isNotEmpty();
    return sorted.get(Math.min(sorted.size() - 1, (int) (q * sorted.size())));
  }

  private void run(int[] threadsPerInstance) throws Exception {
    String prefix = "fleet:" + System.nanoTime() + ":";
    String key = "hot";
    List<RateLimiter> fleet = new ArrayList<>();
    for (int i = 0; i < INSTANCES; i++) {
      DecisionStore store = newStore(prefix);
      stores.add(store);
      fleet.add(Sluice.builder().limit(LIMIT).store(store).leases(LeaseSettings.defaults()
          .withExcessShare(0.1).withInstances(INSTANCES)).build());
    }
    AtomicLong admitted = new AtomicLong();
    AtomicLong decisions = new AtomicLong();
    // the store's round trip under this load, measured beside it (one central decision every
    // 20 ms on a key of its own, asynchronous and on the general path as a lease call is): what
    // the fleet can admit depends on it (docs/fleet.md)
    DecisionStore probeStore = newStore(prefix + "probe:");
    stores.add(probeStore);
    // two limits: the store's general path (a procedure on MySQL), as a lease call takes, not
    // the single bucket's shortcut
    RateLimiter probe = Sluice.builder().limits(Limit.leakyBucket(1_000_000,
        Rate.perSecond(1_000_000)), Limit.leakyBucket(2_000_000, Rate.perSecond(2_000_000)))
        .store(probeStore).build();
    List<Long> roundTrips = new CopyOnWriteArrayList<>();
    int threads = 0;
    for (int t : threadsPerInstance) {
      threads += t;
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
    long start = System.nanoTime();
    long end = start + 3_000_000_000L;
    try {
      List<Future<?>> done = new ArrayList<>();
      done.add(pool.submit(() -> {
        while (System.nanoTime() < end) {
          long t = System.nanoTime();
          // asynchronously, as a lease is refilled: the store's threads and the hand-back
          // are in the time, as a busy host serves them
          probe.tryAcquireAsync("round-trip", 1).get(30, TimeUnit.SECONDS);
          roundTrips.add(System.nanoTime() - t);
          LockSupport.parkNanos(20_000_000L);
        }
        return null;
      }));
      for (int i = 0; i < INSTANCES; i++) {
        RateLimiter l = fleet.get(i);
        for (int t = 0; t < threadsPerInstance[i]; t++) {
          done.add(pool.submit(() -> {
            long mine = 0;
            long n = 0;
            while (System.nanoTime() < end) {
              // pace each sender (load generation, not timing): about 3,000/s a thread, 15x the
              // limit in all, and CPU left for the store on a small host
              LockSupport.parkNanos(200_000);
              n++;
              if (l.tryAcquire(key).isAllowed()) {
                mine++;
              }
            }
            admitted.addAndGet(mine);
            decisions.addAndGet(n);
            return null;
          }));
        }
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      probe.close();
    }
    long local = 0;
    long storeErrors = 0;
    long leaseCalls = 0;
    long leaseCallNanos = 0;
    for (RateLimiter l : fleet) {
      LeaseStats running = l.stats().leases();   // before close's releases, which wait
      leaseCalls += running.leaseCalls();
      leaseCallNanos += running.leaseCallNanos();
      l.close();
      LeaseStats s = l.stats().leases();
      assertThat(s.unitsHeld()).as("held after close").isZero();
      assertThat(s.unitsGranted()).as("every granted unit was spent or given back")
          .isEqualTo((long) s.unitsSpent() + s.unitsReturned());
      assertThat(s.unitsStranded()).isZero();
      local += (long) s.unitsSpent();
      storeErrors += l.stats().storeErrors();
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    double rtt = quantile(roundTrips, 0.5) / 1e9;
    double slow = quantile(roundTrips, 0.9) / 1e9;
    assertThat(storeErrors).isZero();
    assertThat((double) admitted.get()).as("admitted in %.2f s", elapsed)
        .isLessThanOrEqualTo(200 + 2000 * elapsed + BOUND);
    // docs/fleet.md: each instance holds at most cap units (the fleet's caps add up to BOUND)
    // and asks for more, one call at a time, once it holds less than half: while demand
    // outruns its leases it gets about cap / 2 a round trip, and makes its store decisions one
    // at a time while its lease is empty: the fleet can admit min(the rate, (BOUND / 2 +
    // INSTANCES) / RTT) a second, and never more than was asked: on a busy host the senders
    // themselves get little CPU. The round trip is the slower of the probe's median and the lease
    // calls' own mean (LeaseStats): on a busy host eight connections' calls, and their answers,
    // queue behind one another. A grant cut short by a full bucket (the rule while demand
    // outruns the limit) makes the next call wait for half of what was asked, about cap / 4, to
    // leak at the instance's share, r / N: 25 ms here, added to each round trip
    double leaseRtt = leaseCalls == 0 ? 0 : leaseCallNanos / 1e9 / leaseCalls;
    double roundTrip = Math.max(rtt, leaseRtt);
    double pacing = (BOUND / (double) INSTANCES / 4) / (2000.0 / INSTANCES);
    double reachable = Math.min(2000, (BOUND / 2.0 + INSTANCES) / (roundTrip + pacing));
    double expected = Math.min(reachable * 3.0, decisions.get());
    assertThat((double) admitted.get()).as("the fleet admits about what it can reach at the"
        + " round trip measured beside it, %.1f ms, and of its %d lease calls, %.1f ms (%.0f/s),"
        + " or what was asked (%d decisions), not far less", rtt * 1000, leaseCalls,
        leaseRtt * 1000, reachable, decisions.get())
        .isGreaterThan(0.5 * expected);
    // an instance's lease runs out rate / BOUND times a second, and stays empty for about one
    // refill, a round trip as a busy host serves it (the slower of the probe's slow tail, p90,
    // measured beside the load, and the lease calls' own mean: on a busy host the refills queue
    // behind the instances' other calls): the share decided at the store is about rate / BOUND x
    // that; at most 10% on a host quick enough, twice the estimate on a slower one
    double refill = Math.max(slow, leaseRtt);
    double centralShare = Math.max(0.1, 2 * (2000.0 / BOUND) * refill);
    assertThat((double) (admitted.get() - local)).as("admissions decided at the store, with a"
        + " round trip of %.1f ms (p90 %.1f ms; lease calls %.1f ms)", rtt * 1000, slow * 1000,
        leaseRtt * 1000).isLessThan(centralShare * admitted.get());
    assertThat(decisions.get()).as("far more decisions than store calls could serve")
        .isGreaterThan(admitted.get());
    assertThat(expires(stores.get(0), key)).as("the key keeps an expiry").isTrue();
  }
}

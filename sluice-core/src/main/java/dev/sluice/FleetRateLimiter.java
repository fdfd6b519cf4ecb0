package dev.sluice;

import dev.sluice.internal.CircuitBreaker;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.internal.StoreKeys;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;

/*
 * Fleet mode: a store-backed limiter that answers hot keys from leases (docs/fleet.md).
 *
 * Every key this instance sees gets a record (at most maximumKeys of them): the units it holds of
 * a lease, in micro-units, until a deadline; its demand (spent from leases plus asked for and not
 * served from them, sampled every L/4 into a rate); whether a lease call is in flight. A key is
 * hot when half a lifetime of its demand comes to at least MIN_LEASE units; its target is that,
 * capped at this instance's share of the bound (cap, which divides by the instances: as told, or
 * as the store counts them, whichever is more). Requests on a hot key take from what is held with
 * one CAS and never wait for the store; when less than half the target is held, one lease call
 * asks for the rest, in the background. While a hot key holds too little: if the shared bucket
 * had no room (the last grant was short; refills are then paced to what the bucket leaks per
 * instance) it is rejected locally; otherwise the store decides, one call at a time per key, and
 * requests meanwhile are rejected locally. Once a lease call failed, the failure policy answers
 * without a call per decision, the lease call being the probe. Cold keys and costs above the cap
 * are decided by the store, one call each (StoreRateLimiter, with its breaker and failure policy).
 *
 * Units are granted in whole units, each charged to the shared bucket before it is spent: the
 * fleet never admits more than the store charged. What is held when the deadline passes, and
 * everything on close (after the calls in flight land), is given back with a release call; what
 * cannot be given back is counted as stranded (it makes the fleet admit less, never more).
 */
final class FleetRateLimiter extends AbstractRateLimiter {
  /** Held units are counted in millionths, so that fractional costs are spent exactly. */
  static final double MICRO = 1e6;
  /** The smallest lease worth a store call, in units: a key whose target is less is cold. */
  static final long MIN_LEASE = 2;

  private final StoreRateLimiter exact;
  private final DecisionStore store;
  private final ReferenceEngine reference;
  private final CompiledLimit[] compiled;
  private final LeaseSettings settings;
  private final long lifetimeNanos;
  private final long sampleNanos;
  /** The units the whole fleet may hold at once (the bound), before dividing by N. */
  private final double fleetCap;
  /** The slowest limit's rate, units per second: what the shared bucket leaks. */
  private final double leakPerSecond;
  private final Limit deciding;
  private final ConcurrentHashMap<String, LeaseRecord> leases = new ConcurrentHashMap<>();
  /** Records made and not yet removed, never more than maximumKeys (places reserved first). */
  private final AtomicInteger records =
      new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  /** LeaseRecord and release calls sent and not yet answered (with their answer handled). */
  private final AtomicInteger inFlight =
      new AtomicInteger();
  /** close() has given back what was held: a grant landing later is given back at once. */
  private volatile boolean drained;
  /** This instance in the store's count of the fleet's live instances. */
  private final FleetMembership membership;
  private final LongAdder leaseCalls = new LongAdder();
  private final LongAdder leaseCallNanos = new LongAdder();
  private final LongAdder unitsGranted = new LongAdder();
  private final LongAdder unitsReturned = new LongAdder();
  private final LongAdder unitsReconciled = new LongAdder();
  private final LongAdder microStranded = new LongAdder();
  /** Micro-units spent from leases of records no longer in the table. */
  private final LongAdder spentByGone = new LongAdder();
  private final LongAdder localRejections = new LongAdder();
  /** Recent latency of a lease call, nanos: how long a local rejection while refilling lasts. */
  private volatile long leaseLatency = 1_000_000;

  FleetRateLimiter(StoreRateLimiter exact, LeaseSettings settings) {
    super(exact.limits, exact.clock, exact.scheduler);
    this.exact = exact;
    this.store = exact.store;
    this.reference = exact.reference;
    this.compiled = exact.compiled;
    this.settings = settings;
    this.lifetimeNanos = Ticks.toNanosSaturated(settings.lifetime());
    this.sampleNanos = Math.max(1, lifetimeNanos / 4);
    double cap = Double.POSITIVE_INFINITY;
    double leak = Double.POSITIVE_INFINITY;
    for (Limit l : limits) {
      if (l.rate() == null) {
        throw new IllegalStateException("leases take from a leak rate, and limit '" + l.name()
            + "' (" + l.algorithm().id() + ") has none: fleet mode needs buckets"
            + " (leaky bucket, token bucket, GCRA)");
      }
      double perSecond = l.rate().perSecond();
      leak = Math.min(leak, perSecond);
      cap = Math.min(cap, Math.min(l.capacity(),
          Math.min(settings.excessShare() * perSecond, perSecond * lifetimeNanos / 1e9)));
    }
    this.fleetCap = cap;
    this.leakPerSecond = leak;
    this.membership = new FleetMembership(store,
        settings.fleet() != null ? settings.fleet() : FleetMembership.fleetOf(limits),
        settings.instances(), Math.max(1000, 3 * lifetimeNanos / 1_000_000));
    if (instanceCap() < MIN_LEASE) {
      throw new IllegalArgumentException(String.format(Locale.ROOT,
          "leases would hold %s units per instance (the least of the capacity, %s%% of a second"
              + " of the rate and a lifetime of the rate, over %d instances), and a lease needs at"
              + " least %d: raise excessShare or the lifetime, or leave leases off",
          Checks.format(Math.floor(cap / settings.instances() * 1000) / 1000),
          Checks.format(settings.excessShare() * 100), settings.instances(), MIN_LEASE));
    }
    this.deciding = limits.get(0);
    exact.shareAmong(this::instances);
    membership.heartbeat();
    scheduleSweep();
  }

  /** The instances the caps assume: as told, or as many as the store last counted if more. */
  int instances() {
    return membership.instances();
  }

  /** The most units this instance may hold at once. */
  long instanceCap() {
    return (long) Math.floor(fleetCap / instances());
  }

  @Override
  public Decision tryAcquire(String key) {
    return tryAcquire(key, 1);
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    // As the in-memory limiter does: the work is done by a method that returns no new object
    // (too big to inline, so its size does not count here), and the one allocation below, which
    // both outcomes reach (the store's decision is copied), is all that inlines into the caller.
    // Escape analysis then drops the decision of the hot path when the caller only reads it: a
    // decision merged from two allocations at a return could not be dropped.
    LeaseRecord l = spendFromLease(key, cost);
    Decision other = l == null ? local(key, cost, true, true) : null;
    return new Decision(other, l == null ? 0 : Math.max(0, l.held.get()) / MICRO,
        l == null ? 0 : l.resetAfterNanos, deciding);
  }

  /**
   * The hot path: takes the cost from the key's live lease and returns the lease, or returns
   * null (no lease, too little held, expired: the slower path decides). Counts demand samples and
   * asks for a refill when what is held runs low. The key was checked when its record was made.
   */
  private LeaseRecord spendFromLease(String key, double cost) {
    Checks.cost(cost);
    LeaseRecord l = leases.get(Objects.requireNonNull(key, "key"));
    if (l == null) {
      return null;
    }
    long now = clock.nanoTime();
    // Every L/4, the demand since the last sample becomes a rate (half the last, half the new):
    // what was spent from leases plus what was asked for and not served from them.
    long start = l.sampleStart.get();
    long elapsed = now - start;
    if (elapsed >= sampleNanos && l.sampleStart.compareAndSet(start, now)) {
      long spent = l.spent();
      long demand = spent - l.spentAtSample + l.unmet.sumThenReset();
      l.spentAtSample = spent;
      double measured = Math.max(0, demand) / MICRO * 1e9 / elapsed;
      l.rate = elapsed > lifetimeNanos ? measured : (l.rate + measured) / 2;
      long target = target(l);
      l.lowWater = target < MIN_LEASE ? 0 : (long) (target * MICRO / 2);
    }
    double micro = Math.ceil(cost * MICRO);
    if (now - l.deadline >= 0 || micro >= HUGE) {
      return null;
    }
    long need = (long) micro;
    // spend() written out: calling it would make this method small enough to inline, and then
    // the hot path would compile too big for the caller to inline, and the decision would be
    // allocated again (HotKeyBenchmark.sluiceLeased measures it)
    AtomicLong held = l.held;
    long after;
    for (;;) {
      long h = held.get();
      if (h < need) {
        return null;
      }
      if (held.compareAndSet(h, h - need)) {
        after = h - need;
        break;
      }
    }
    if (after < l.lowWater && now - l.nextCall >= 0 && !l.busy.get()) {
      refillIfLow(l, now, 0);
    }
    return l;
  }

  /** From local(): ask the store for this one, then {@link #endProbe}. Never returned to users. */
  private static final Decision VIA_STORE =
      new Decision(false, false, 0, 0, 0, 0, Limit.leakyBucket(1, Rate.perSecond(1)), null);

  private void endProbe(String key) {
    LeaseRecord l = leases.get(key);
    if (l != null) {
      l.probing.set(false);
    }
  }

  /** Costs from this many micro-units up never take the hot path (they do not fit a lease). */
  private static final long HUGE = Long.MAX_VALUE / 4;

  @Override
  public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    LeaseRecord l = spendFromLease(key, cost);
    Decision local = l != null
        ? new Decision(null, Math.max(0, l.held.get()) / MICRO, l.resetAfterNanos, deciding)
        : local(key, cost, true, false);
    if (local == VIA_STORE) {
      return exact.tryAcquireAsync(key, cost).whenComplete((d, failure) -> endProbe(key));
    }
    return local != null ? CompletableFuture.completedFuture(local) : exact.tryAcquireAsync(key, cost);
  }

  @Override
  public Decision check(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    Decision local = local(key, cost, false, false);
    if (local == VIA_STORE) {
      try {
        return exact.check(key, cost);
      } finally {
        endProbe(key);
      }
    }
    return local != null ? local : exact.check(key, cost);
  }

  @Override
  public Decision fillUp(String key, double cost) {
    return exact.fillUp(key, cost);
  }

  @Override
  public Decision reserve(String key, double cost) {
    return exact.reserve(key, cost);
  }

  @Override
  public CompletableFuture<Decision> reserveAsync(String key, double cost) {
    return exact.reserveAsync(key, cost);
  }

  @Override
  public void reset(String key) {
    StoreKeys.check(key);
    LeaseRecord l = leases.remove(key);
    if (l != null) {
      records.decrementAndGet();
      l.out.addAndGet(l.held.getAndSet(0));   // the store forgets what it charged for it
      spentByGone.add(l.spent());
    }
    exact.reset(key);
  }

  /**
   * The local answer for a key, or null when the store must decide: cold key, cost above the cap,
   * last lease call failed, closed, or no record (table full). With {@code orStore}, the store's
   * answer (tryAcquire) instead of null: the hot path calls it so, and it is kept too big to
   * inline there, so that the hot path compiles small enough to inline into its caller.
   */
  private Decision local(String key, double cost, boolean take, boolean orStore) {
    if (orStore) {
      StoreKeys.check(key);
    }
    if (closed.get()) {
      return orStore ? exact.tryAcquire(key, cost) : null;
    }
    double micro = Math.ceil(cost * MICRO);
    long cap = instanceCap();
    if (micro > cap * MICRO) {
      return orStore ? exact.tryAcquire(key, cost) : null;
    }
    long need = (long) micro;
    long now = clock.nanoTime();
    LeaseRecord l = record(key, now);
    if (l == null) {
      return orStore ? exact.tryAcquire(key, cost) : null;
    }
    if (now - l.deadline < 0) {
      Decision d = fromLease(l, need, take, now);
      if (d != null) {
        return d;
      }
    } else {
      expire(l, now);
    }
    long target = target(l);
    if (target < MIN_LEASE) {
      if (take) {
        l.unmet.add(need);   // a cold key: the store decides
      }
      return orStore ? exact.tryAcquire(key, cost) : null;
    }
    if (take) {
      // also the probe of a store whose lease calls failed: the breaker lets one through when due
      refillIfLow(l, now, need);
      // a store that answers at once (or a refill that just landed) may have brought enough
      Decision d = now - l.deadline < 0 ? fromLease(l, need, true, now) : null;
      if (d != null) {
        return d;
      }
      l.unmet.add(need);
    }
    if (l.failing) {
      // The store cannot grant leases: its failure policy answers, without a store call per
      // decision (calls per decision on a hot key are what overloads a struggling store).
      Decision d = exact.degraded(key, take ? Engine.TRY_ACQUIRE : Engine.CHECK, cost,
          exact.breakerFor(key));
      if (take && d.isAllowed()) {
        l.owed.addAndGet(need);
      }
      return d;
    }
    if (!l.short_ && l.probing.compareAndSet(false, true)) {
      // The shared bucket had room at the last grant: rather than reject while the refill is on
      // its way, ask the store, one call at a time per key on this instance (however many
      // requests come, the store sees at most one such call per key and instance).
      if (!orStore) {
        return VIA_STORE;   // the caller asks the store, then clears the probe
      }
      try {
        return exact.tryAcquire(key, cost);
      } finally {
        l.probing.set(false);
      }
    }
    if (take) {
      localRejections.increment();
    }
    long retry = Math.max(1, l.short_ ? l.nextCall - now : leaseLatency);
    return new Decision(false, false, Math.max(0, l.held.get()) / MICRO, retry,
        Math.max(retry, l.resetAfterNanos), 0, deciding, null, false, true);
  }

  /** The admission from what is held (taken when {@code take}), or null if not enough is held. */
  private Decision fromLease(LeaseRecord l, long need, boolean take, long now) {
    long held = take ? spend(l, need) : l.held.get() - need;
    if (held < 0) {
      return null;
    }
    if (take) {
      refillIfLow(l, now, 0);
    }
    return new Decision(true, false, held / MICRO, 0, l.resetAfterNanos, 0, deciding, null,
        false, true);
  }

  /** Takes need micro-units if held; returns what is held after, or -1 if not enough. */
  private static long spend(LeaseRecord l, long need) {
    AtomicLong held = l.held;
    for (;;) {
      long h = held.get();
      if (h < need) {
        return -1;
      }
      if (held.compareAndSet(h, h - need)) {
        return h - need;
      }
    }
  }

  /** The key's record, created on first sight while there is room; null when the table is full. */
  private LeaseRecord record(String key, long now) {
    LeaseRecord l = leases.get(key);
    if (l != null) {
      return l;
    }
    // a place is reserved before the record is made, so the bound holds under any number of
    // threads
    if (records.incrementAndGet() > settings.maximumKeys()) {
      records.decrementAndGet();
      return null;
    }
    LeaseRecord made = new LeaseRecord(key, now);
    LeaseRecord raced = leases.putIfAbsent(key, made);
    if (raced != null) {
      records.decrementAndGet();
      return raced;
    }
    return made;
  }

  /** Units a lease of this key aims to hold: half a lifetime of demand, within the cap. */
  private long target(LeaseRecord l) {
    double units = Math.ceil(l.rate * lifetimeNanos / 2e9);
    return (long) Math.min(units, instanceCap());
  }

  /**
   * Asks for a refill when less than half the target is held, or less than {@code need}, unless
   * one is in flight.
   */
  private void refillIfLow(LeaseRecord l, long now, long need) {
    long target = target(l);
    if (target < MIN_LEASE) {
      return;
    }
    long held = l.held.get();
    if ((held * 2 >= target * MICRO && held >= need) || now - l.nextCall < 0 || closed.get()) {
      return;
    }
    long want = target - (long) Math.ceil(held / MICRO);
    if (want <= 0 || !l.busy.compareAndSet(false, true)) {
      return;
    }
    CircuitBreaker b = exact.breakerFor(l.key);
    if (!b.allowsCall()) {
      l.failing = true;
      l.busy.set(false);
      return;
    }
    send(l.key, reference.request(Operation.LEASE, 1, want),
        (observation, failure) -> granted(l, b, want, now, observation, failure));
  }

  /**
   * Sends a lease or release call in the background and runs {@code then} on its answer; the
   * call counts as in flight until {@code then} has run, so that close() can wait for it.
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void send(String key, StoreRequest request,
      BiConsumer<Observation, Throwable> then) {
    leaseCalls.increment();
    inFlight.incrementAndGet();
    long sent = clock.nanoTime();
    CompletableFuture<Observation> answer;
    try {
      answer = store.applyAsync(key, request);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    answer.whenComplete((observation, failure) -> {
      leaseCallNanos.add(Math.max(0, clock.nanoTime() - sent));
      try {
        then.accept(observation, failure);
      } finally {
        inFlight.decrementAndGet();
      }
    });
  }

  /** A lease call came back: holds what was granted, or records the failure. */
  private void granted(LeaseRecord l, CircuitBreaker b, long want, long sent, Observation seen,
      Throwable failure) {
    try {
      long now = clock.nanoTime();
      leaseLatency = (leaseLatency + Math.max(1, now - sent)) / 2;
      if (failure != null) {
        exact.failed(b, failure);
        l.failing = true;
        return;
      }
      b.success();
      l.failing = false;
      reconcile(l);
      long[] state = seen.normalizedState();
      long[] next = new long[state.length];
      long g = Engine.lease(compiled, state, seen.now(), Engine.LEASE, 1, want, next);
      Decision after = Engine.decide(compiled, next, seen.now(), Engine.CHECK, 1,
          new long[next.length]);
      unitsGranted.add(g);
      l.resetAfterNanos = after.resetAfterNanos();
      l.short_ = g < want;
      // After a short grant, ask again once this instance's share of the leak has refilled half
      // the target: asking sooner would find (almost) nothing and only cost calls.
      l.nextCall = g < want
          ? now + (long) Math.ceil((want / 2.0) / (leakPerSecond / instances()) * 1e9) : now;
      l.deadline = now + lifetimeNanos;
      l.in.addAndGet((long) (g * MICRO));
      l.held.addAndGet((long) (g * MICRO));
      if (drained) {
        giveBack(l, false);   // close() stopped waiting for this call: give it back now
      }
    } catch (RuntimeException | Error e) {
      l.failing = true;
    } finally {
      l.busy.set(false);
    }
  }

  /**
   * Charges the shared bucket with what the failure policy admitted while the store was down
   * (the seed's reconciliation), as far as it has room: a lease call whose grant is not held.
   */
  private void reconcile(LeaseRecord l) {
    long owed = l.owed.getAndSet(0);
    long units = (long) Math.ceil(owed / MICRO);
    if (units <= 0) {
      return;
    }
    send(l.key, reference.request(Operation.LEASE, 1, units), (seen, failure) -> {
      if (seen != null) {   // best effort: if the store failed again, nothing more is tried
        long g = Engine.lease(compiled, seen.normalizedState(), seen.now(), Engine.LEASE, 1,
            units, new long[seen.stateBefore().length]);
        unitsReconciled.add(g);
      }
    });
  }

  /** Gives back what is held if the deadline has passed. */
  private void expire(LeaseRecord l, long now) {
    if (l.held.get() > 0 && now - l.deadline >= 0 && !l.busy.get()) {
      giveBack(l, false);
    }
  }

  /**
   * Gives back every whole unit held (a fraction left over is stranded), with one release call;
   * {@code wait} blocks until it is done (on close).
   */
  private void giveBack(LeaseRecord l, boolean wait) {
    long micro = l.held.getAndSet(0);
    if (micro <= 0) {
      return;
    }
    l.out.addAndGet(micro);
    long units = (long) (micro / MICRO);
    microStranded.add(micro - (long) (units * MICRO));   // a fraction of a unit cannot go back
    if (units == 0) {
      return;
    }
    BiConsumer<Observation, Throwable> count = (ok, failure) -> {
      if (failure == null) {
        unitsReturned.add(units);
      } else {
        microStranded.add((long) (units * MICRO));
      }
    };
    StoreRequest release = reference.request(Operation.RELEASE, 1, units);
    if (!wait) {
      send(l.key, release, count);
      return;
    }
    leaseCalls.increment();
    long sent = clock.nanoTime();
    try {
      store.apply(l.key, release);
      count.accept(null, null);
    } catch (RuntimeException e) {
      count.accept(null, e);
    } finally {
      leaseCallNanos.add(Math.max(0, clock.nanoTime() - sent));
    }
  }

  /** Every half lifetime: gives back expired leases and forgets idle records. */
  private void scheduleSweep() {
    if (closed.get()) {
      return;
    }
    try {
      scheduler.schedule(this::sweep, Math.max(1, lifetimeNanos / 2));
    } catch (RuntimeException e) {
      // a scheduler that refuses work (shut down): expiry then happens on the next request
    }
  }

  void sweep() {
    if (closed.get()) {
      return;
    }
    try {
      membership.heartbeat();
      long now = clock.nanoTime();
      for (LeaseRecord l : leases.values()) {
        expire(l, now);
        // idle: no request since the last demand sample, 4 lifetimes ago (a request after it
        // would have taken a new sample)
        if (l.held.get() == 0 && !l.busy.get() && now - l.sampleStart.get() > 4 * lifetimeNanos) {
          if (leases.remove(l.key, l)) {
            records.decrementAndGet();
            if (l.held.get() > 0) {
              giveBack(l, false);
            }
            spentByGone.add(l.spent());
          }
        }
      }
    } finally {
      scheduleSweep();
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    // LeaseRecord and release calls in flight land first (up to CLOSE_WAIT): a grant that lands is
    // held, and given back below with everything else, so that the counts are whole when close()
    // returns.
    long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
    while (inFlight.get() > 0 && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(1_000_000);
    }
    for (LeaseRecord l : leases.values()) {
      giveBack(l, true);
    }
    drained = true;
    for (LeaseRecord l : leases.values()) {
      if (l.held.get() > 0) {   // landed between the loop and the flag
        giveBack(l, true);
      }
    }
  }

  /** How long close() waits for lease calls in flight. */
  static final long CLOSE_WAIT_NANOS = 10_000_000_000L;

  @Override
  public LimiterStats stats() {
    LimiterStats s = exact.stats();
    long held = 0;
    long spent = spentByGone.sum();
    for (LeaseRecord l : leases.values()) {
      held += l.held.get();
      spent += l.spent();
    }
    LeaseStats leaseStats = new LeaseStats(leaseCalls.sum(), leaseCallNanos.sum(),
        unitsGranted.sum(),
        unitsReturned.sum(), (long) (microStranded.sum() / MICRO), (long) (held / MICRO), spent / MICRO,
        localRejections.sum(), unitsReconciled.sum(), leases.size(), instances());
    return new LimiterStats(s.storeErrors(), s.degradedDecisions(), s.breakerOpen(),
        s.evictedIdle(), s.evictedBusy(), s.deniedLocally(), s.keysHeld(), leaseStats);
  }
}

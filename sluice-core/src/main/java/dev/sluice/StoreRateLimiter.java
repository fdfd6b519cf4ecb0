package dev.sluice;

import dev.sluice.internal.Breakers;
import dev.sluice.internal.CircuitBreaker;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.internal.StoreKeys;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

/**
 * A limiter whose state lives in a {@link DecisionStore}: the store applies each operation
 * atomically on its clock and reports what it saw; the decision is rebuilt here with the same
 * engine the in-memory store uses.
 */
final class StoreRateLimiter extends AbstractRateLimiter {


  final DecisionStore store;
  final ReferenceEngine reference;
  final CompiledLimit[] compiled;
  private final StoreFailure onFailure;
  /** The breakers of the store's failure domains (one, or one per cluster node). */
  private final Breakers breakers;
  private final RateLimiter fallback;
  private final AtomicLong deniedLocally = new AtomicLong();
  /** Local deny cache: key → the rejection and until when it holds; null when disabled. */
  private final ConcurrentHashMap<String, Denial> denials;
  private final int denyCacheSize;

  /** A store's rejection: costs at least {@code cost} are rejected until {@code untilNanos}. */
  private record Denial(double cost, long untilNanos, Decision decision) {}

  /**
   * Fleet mode's local share: the instances it assumes, its in-process limiter, and the keys it
   * has started (a key starts full: the shared bucket's level is unknown, and assuming it empty
   * would let every instance burst its share of the capacity at once).
   */
  private record Share(int instances, RateLimiter limiter, Set<String> started) {}

  /** The number of instances a local share divides each limit by; null outside fleet mode. */
  private volatile IntSupplier instances;
  private volatile Share share;
  private final long fallbackMaximumKeys;

  /** A group's limits, when this limiter decides a {@link Group}; null otherwise. */
  private final GroupLimits group;
  /** Combines tryAcquire calls on a key (DecisionStore.combinesDecisions); null when off. */
  private final Combiner combiner;

  StoreRateLimiter(List<Limit> limits, DecisionStore store, Clock clock, Scheduler scheduler,
      StoreFailure onFailure, CircuitBreakerSettings breakerSettings, long fallbackMaximumKeys,
      int denyCacheSize) {
    this(limits, null, store, clock, scheduler, onFailure, breakerSettings, fallbackMaximumKeys,
        denyCacheSize);
  }

  /** A limiter of a {@link Group} on a store. */
  StoreRateLimiter(Group group, DecisionStore store, Clock clock, Scheduler scheduler,
      StoreFailure onFailure, CircuitBreakerSettings breakerSettings, long fallbackMaximumKeys,
      int denyCacheSize) {
    this(group.limits(), group, store, clock, scheduler, onFailure, breakerSettings,
        fallbackMaximumKeys, denyCacheSize);
  }

  private StoreRateLimiter(List<Limit> limits, Group groupSpec, DecisionStore store, Clock clock,
      Scheduler scheduler, StoreFailure onFailure, CircuitBreakerSettings breakerSettings,
      long fallbackMaximumKeys, int denyCacheSize) {
    super(limits, clock, scheduler);
    this.denyCacheSize = denyCacheSize;
    this.denials = denyCacheSize > 0 ? new ConcurrentHashMap<>() : null;
    this.store = store;
    this.onFailure = onFailure;
    this.breakers = new Breakers(breakerSettings, this.clock);
    this.fallbackMaximumKeys = fallbackMaximumKeys;
    this.fallback = onFailure != StoreFailure.FALLBACK_IN_MEMORY ? null
        : groupSpec != null
            ? new InMemoryGroupLimiter(groupSpec, this.clock, scheduler, fallbackMaximumKeys)
            : new InMemoryRateLimiter(limits, this.clock, scheduler, fallbackMaximumKeys, true);
    long tps = store.ticksPerSecond();
    if (tps <= 0 || 1_000_000_000L % tps != 0) {
      throw new IllegalArgumentException("a store's ticksPerSecond must divide 1e9 but was " + tps);
    }
    reference = groupSpec != null ? ReferenceEngine.ofGroup(groupSpec, tps)
        : ReferenceEngine.of(limits, tps);
    compiled = reference.compiled();
    group = reference.group();
    combiner = store.combinesDecisions() && group == null && combinable(compiled)
        ? new Combiner(new CombinedCalls()) : null;
  }

  /**
   * Whether tryAcquire calls on these limits may be combined into a lease: buckets (a lease
   * takes from a leak rate) without a penalty (a rejection that starts one writes; a lease
   * never does).
   */
  static boolean combinable(CompiledLimit[] limits) {
    for (CompiledLimit l : limits) {
      if (l.kind != CompiledLimit.BUCKET || l.penalty > 0) {
        return false;
      }
    }
    return true;
  }

  /** The store calls of the combiner, and each caller's share of a batch. */
  private final class CombinedCalls implements Combiner.Calls {
    @Override
    public Observation single(String key, StoreRequest request) {
      return store.apply(key, request);
    }

    @Override
    public CompletableFuture<Observation> batch(String key, double cost, int count) {
      return store.applyAsync(key, count == 1 ? request(Engine.TRY_ACQUIRE, cost)
          : reference.request(StoreProtocol.Operation.LEASE, cost, count));
    }

    @Override
    public Observation[] split(Observation seen, double cost, int count) {
      return splitBatch(compiled, seen, cost, count);
    }

    @Override
    public void failed(String key, Throwable failure) {
      StoreRateLimiter.this.failed(breakerFor(key), failure);
    }
  }

  /**
   * Each of {@code count} tryAcquires' observations, in order, from the observation of the lease
   * that combined them: the state before the first is the lease's, and each next one is the state
   * the one before it left, by the engine, at the same clock reading.
   */
  static Observation[] splitBatch(CompiledLimit[] limits, Observation seen, double cost,
      int count) {
    Observation[] each = new Observation[count];
    long[] s = seen.normalizedState();
    for (int i = 0; i < count; i++) {
      each[i] = new Observation(seen.now(), s);
      if (i + 1 < count) {
        long[] next = new long[s.length];
        Engine.decide(limits, s, seen.now(), Engine.TRY_ACQUIRE, cost, next);
        s = next;
      }
    }
    return each;
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    long now = denials == null ? 0 : clock.nanoTime();
    Decision local = localDenial(key, cost, now);
    if (local != null) {
      return local;
    }
    return remember(key, cost, now, decide(key, Engine.TRY_ACQUIRE, cost));
  }

  @Override
  public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    long now = denials == null ? 0 : clock.nanoTime();
    Decision local = localDenial(key, cost, now);
    if (local != null) {
      return CompletableFuture.completedFuture(local);
    }
    return decideAsync(key, Engine.TRY_ACQUIRE, cost, now);
  }

  @Override
  public CompletableFuture<Decision> reserveAsync(String key, double cost) {
    checkReserve(key, cost);
    return decideAsync(key, Engine.RESERVE, cost, 0);
  }

  /** The checks before a reserve: the key, the cost, and limits that can queue. */
  private void checkReserve(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    if (group != null) {
      throw new UnsupportedOperationException(GroupLimits.unsupported(Engine.RESERVE));
    }
    if (!Engine.canReserve(compiled)) {
      Engine.decide(compiled, Engine.initialState(compiled), 0, Engine.RESERVE, 1,
          new long[Engine.initialState(compiled).length]);   // throws the explanation
    }
  }

  /** One decision on the store's asynchronous call; {@code now} is for the deny cache. */
  private CompletableFuture<Decision> decideAsync(String key, int op, double cost, long now) {
    String groupName = group != null ? groupOf(key) : null;
    CircuitBreaker b = breakerFor(key, groupName);
    if (!b.allowsCall()) {
      return CompletableFuture.completedFuture(degraded(key, op, cost, b));
    }
    CompletableFuture<Observation> seen;
    try {
      seen = groupName != null ? store.applyGroupAsync(groupName, key, request(op, cost))
          : combiner != null && op == Engine.TRY_ACQUIRE ? combiner.applyAsync(key, cost)
          : store.applyAsync(key, request(op, cost));
    } catch (RuntimeException e) {
      seen = CompletableFuture.failedFuture(e);
    }
    return seen.handle((observation, failure) -> {
      if (failure != null) {
        if (!(Breakers.cause(failure) instanceof Combiner.CombinedFailure)) {
          failed(b, failure);   // a batch's failure was counted once, by whoever sent it
        }
        return degraded(key, op, cost, b);
      }
      b.success();
      Decision d = fromObservation(observation, op, cost);
      return op == Engine.TRY_ACQUIRE ? remember(key, cost, now, d) : d;
    });
  }

  /** The cached rejection of this key for this cost, aged to now; null if none applies. */
  private Decision localDenial(String key, double cost, long now) {
    if (denials == null) {
      return null;
    }
    Denial denial = denials.get(key);
    if (denial == null) {
      return null;
    }
    long left = denial.untilNanos() - now;
    if (left <= 0) {
      denials.remove(key, denial);
      return null;
    }
    if (cost < denial.cost()) {
      return null;
    }
    deniedLocally.incrementAndGet();
    Decision d = denial.decision();
    long aged = d.retryAfterNanos() - left;
    return new Decision(false, false, d.remaining(), left,
        Math.max(left, d.resetAfterNanos() - aged), 0, d.limit(),
        d.perLimit().size() > 1 ? d.perLimit() : null);
  }

  /** Records a store's rejection in the deny cache (when enabled); returns the decision. */
  private Decision remember(String key, double cost, long now, Decision d) {
    if (denials == null) {
      return d;
    }
    if (d.isAllowed()) {
      denials.remove(key);
    } else if (!d.isDegraded() && d.retryAfterNanos() != Engine.NEVER && d.retryAfterNanos() > 0) {
      if (denials.size() >= denyCacheSize) {
        denials.values().removeIf(x -> x.untilNanos() - now <= 0);
      }
      if (denials.size() < denyCacheSize) {
        denials.put(key, new Denial(cost, now + d.retryAfterNanos(), d));
      }
    }
    return d;
  }

  @Override
  public Decision check(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    return decide(key, Engine.CHECK, cost);
  }

  @Override
  public Decision fillUp(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    if (group != null) {
      throw new UnsupportedOperationException(GroupLimits.unsupported(Engine.FILL_UP));
    }
    return decide(key, Engine.FILL_UP, cost);
  }

  @Override
  public CompletableFuture<Decision> checkAsync(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    return decideAsync(key, Engine.CHECK, cost, 0);
  }

  @Override
  public CompletableFuture<Decision> fillUpAsync(String key, double cost) {
    StoreKeys.check(key);
    Checks.cost(cost);
    if (group != null) {
      throw new UnsupportedOperationException(GroupLimits.unsupported(Engine.FILL_UP));
    }
    return decideAsync(key, Engine.FILL_UP, cost, 0);
  }

  @Override
  public Decision reserve(String key, double cost) {
    checkReserve(key, cost);
    return decide(key, Engine.RESERVE, cost);
  }

  @Override
  public void reset(String key) {
    StoreKeys.check(key);
    if (group != null) {
      store.resetGroupMember(groupOf(key), key);
    } else {
      store.reset(key);
    }
    if (denials != null) {
      denials.remove(key);
    }
    if (fallback != null) {
      fallback.reset(key);
    }
  }

  @Override
  public LimiterStats stats() {
    LimiterStats local = fallback == null ? null : fallback.stats();
    return new LimiterStats(breakers.storeErrors(), breakers.degradedAnswers(),
        breakers.anyOpen(),
        local == null ? 0 : local.evictedIdle(), local == null ? 0 : local.evictedBusy(),
        deniedLocally.get(), local == null ? 0 : local.keysHeld());
  }

  private StoreRequest request(int op, double cost) {
    return reference.request(StoreProtocol.Operation.of(op), cost);
  }

  /** The key's group, checked as a store key (bad input names the key). */
  private String groupOf(String key) {
    String g = group.group.groupOf(key);
    String problem = StoreKeys.problem(g);
    if (problem != null) {
      throw new IllegalArgumentException("the group of key \"" + key + "\" " + problem);
    }
    return g;
  }

  private Decision fromObservation(Observation seen, int op, double cost) {
    long[] state = seen.normalizedState();
    if (group != null) {
      return group.decide(state, seen.now(), op, group.quanta(cost), new long[state.length]);
    }
    return Engine.decide(compiled, state, seen.now(), op, cost, new long[state.length]);
  }

  /** Key and cost already checked. */
  Decision decide(String key, int op, double cost) {
    StoreRequest request = request(op, cost);
    String groupName = group != null ? groupOf(key) : null;
    CircuitBreaker b = breakerFor(key, groupName);
    if (!b.allowsCall()) {
      return degraded(key, op, cost, b);
    }
    Observation seen;
    try {
      seen = groupName != null ? store.applyGroup(groupName, key, request)
          : combiner != null && op == Engine.TRY_ACQUIRE ? combiner.apply(key, cost, request)
          : store.apply(key, request);
    } catch (Combiner.CombinedFailure e) {
      return degraded(key, op, cost, b);   // its batch's call failed, and was counted once
    } catch (RuntimeException e) {
      failed(b, e);
      return degraded(key, op, cost, b);
    }
    b.success();
    return fromObservation(seen, op, cost);
  }

  /** The combiner of tryAcquire calls, or null when they are not combined (for tests). */
  Combiner combiner() {
    return combiner;
  }

  /** Fleet mode: where LOCAL_SHARE reads the number of instances. */
  void shareAmong(IntSupplier instances) {
    this.instances = instances;
  }

  /** The in-process limiter of this instance's share, rebuilt when the fleet's size changes. */
  private RateLimiter share() {
    int n = Math.max(1, instances == null ? 1 : instances.getAsInt());
    Share s = share;
    if (s == null || s.instances() != n) {
      List<Limit> scaled = new ArrayList<>();
      for (Limit l : limits) {
        scaled.add(l.scaledBy(1.0 / n).withPenalty(Duration.ZERO));
      }
      s = new Share(n, new InMemoryRateLimiter(scaled, clock, scheduler, fallbackMaximumKeys, true),
          ConcurrentHashMap.newKeySet());
      share = s;
    }
    return s.limiter();
  }

  /** Starts a key of the local share full, once. */
  private void startFull(String key) {
    Share s = share;
    if (s.started().add(key)) {
      if (s.started().size() > fallbackMaximumKeys) {
        s.started().clear();   // bounded; a key seen again starts full again, which is safe
        s.started().add(key);
      }
      double most = Double.POSITIVE_INFINITY;
      for (Limit l : s.limiter().limits()) {
        most = Math.min(most, l.capacity());
      }
      s.limiter().fillUp(key, most);
    }
  }

  /** The breaker of the key's failure domain. */
  CircuitBreaker breakerFor(String key) {
    return breakerFor(key, null);
  }

  /** The breaker of the failure domain of the key, or of its group when it has one. */
  private CircuitBreaker breakerFor(String key, String groupName) {
    return groupName != null ? breakers.of(store::groupFailureDomain, groupName)
        : breakers.of(store::failureDomain, key);
  }

  void failed(CircuitBreaker b, Throwable failure) {
    breakers.callFailed(b, failure);
  }

  /** {@code op} decided by an in-process limiter (the fallback, or this instance's share). */
  private static Decision decideLocally(RateLimiter local, String key, int op, double cost) {
    switch (op) {
      case Engine.CHECK: return local.check(key, cost);
      case Engine.FILL_UP: return local.fillUp(key, cost);
      case Engine.RESERVE: return local.reserve(key, cost);
      default: return local.tryAcquire(key, cost);
    }
  }

  /** The failure policy's answer, marked degraded and counted. */
  Decision degraded(String key, int op, double cost, CircuitBreaker domain) {
    breakers.degradedAnswer();
    switch (onFailure) {
      case LOCAL_SHARE: {
        RateLimiter local = share();   // made (for the instances now) before the key starts full
        startFull(key);
        return decideLocally(local, key, op, cost).degraded();
      }
      case FALLBACK_IN_MEMORY:
        return decideLocally(fallback, key, op, cost).degraded();
      case FAIL_OPEN:
        return new Decision(true, false, compiled[0].limit.capacity(), 0, 0, 0, compiled[0].limit,
            null, true);
      default: {
        // Retry when the breaker next lets a call through (at least a second).
        long retry = Math.max(domain.remainingOpenNanos(), 1_000_000_000L);
        return Decision.unavailable(retry, compiled[0].limit);
      }
    }
  }
}

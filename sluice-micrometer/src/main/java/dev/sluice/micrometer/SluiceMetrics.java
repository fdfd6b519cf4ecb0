package dev.sluice.micrometer;

import dev.sluice.Decision;
import dev.sluice.LeaseStats;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.RateLimiter;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer meters for a {@link RateLimiter} or a {@link ConcurrencyLimiter}
 * ({@link #binder(ConcurrencyLimiter, String, String...)}), tagged {@code limiter=<name>}.
 *
 * <pre>{@code
 * RateLimiter limiter = SluiceMetrics.monitor(
 *     Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(5))).build(), "api", registry);
 * }</pre>
 *
 * <p>{@link #monitor} wraps a limiter so that each decision is counted and timed:
 * <ul>
 *   <li>{@code sluice.decisions} (counter) {@code {limiter, operation, outcome, degraded, limit}}:
 *       operation {@code tryAcquire | check | fillUp | reserve | acquire}; outcome
 *       {@code allowed | rejected} ({@code fillUp}: {@code rejected} when it reached capacity);
 *       degraded {@code true} when the store failed and the failure policy answered; limit the
 *       deciding limit's name;
 *   <li>{@code sluice.decision.duration} (timer) {@code {limiter, operation}}: the whole call,
 *       store round trip included (for the asynchronous operations, until the future completes).
 * </ul>
 *
 * <p>{@link #binder} (also bound by {@code monitor}) reads the limiter's {@link LimiterStats}:
 * {@code sluice.store.errors}, {@code sluice.decisions.degraded}, {@code sluice.denied.locally},
 * {@code sluice.evictions{kind=idle|busy}} (counters), {@code sluice.circuit.open} (1 while the
 * breaker keeps calls away from the store), {@code sluice.keys} (held in memory), and in fleet
 * mode (and only then) {@code sluice.lease.calls}, {@code sluice.lease.units.granted},
 * {@code sluice.lease.units.returned}, {@code sluice.lease.units.stranded},
 * {@code sluice.lease.units.spent}, {@code sluice.lease.local.rejections},
 * {@code sluice.lease.units.reconciled} (counters), {@code sluice.lease.units.held},
 * {@code sluice.lease.keys} and {@code sluice.lease.instances} (gauges).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#actuator-and-micrometer">docs/spring.md, "Actuator and Micrometer"</a>.
 */
public final class SluiceMetrics {
  private SluiceMetrics() {}

  /**
   * The limiter, its decisions counted and timed in {@code registry}, its stats bound too.
   *
   * @throws IllegalArgumentException if {@code name} is blank
   */
  public static RateLimiter monitor(RateLimiter limiter, String name, MeterRegistry registry) {
    Objects.requireNonNull(limiter, "limiter");
    Objects.requireNonNull(registry, "registry");
    binder(limiter, name).bindTo(registry);
    return new Metered(limiter, name, registry);
  }

  /**
   * A binder of the limiter's stats (no per-decision meters: for a limiter whose calls cannot be
   * wrapped).
   *
   * @throws IllegalArgumentException if {@code name} is blank
   */
  // ReferenceEquality: NONE marks a limiter not in fleet mode; a fleet's all-zero stats equal it but are not it
  @SuppressWarnings("ReferenceEquality")
  public static MeterBinder binder(RateLimiter limiter, String name) {
    Objects.requireNonNull(limiter, "limiter");
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank");
    }
    return registry -> {
      Tags tags = Tags.of("limiter", name);
      counter(registry, "sluice.store.errors", "Calls to the shared store that failed", tags,
          limiter, l -> l.stats().storeErrors());
      counter(registry, "sluice.decisions.degraded", "Decisions the failure policy answered",
          tags, limiter, l -> l.stats().degradedDecisions());
      counter(registry, "sluice.denied.locally", "Rejections answered by the local deny cache",
          tags, limiter, l -> l.stats().deniedLocally());
      counter(registry, "sluice.evictions", "In-memory keys evicted", tags.and("kind", "idle"),
          limiter, l -> l.stats().evictedIdle());
      counter(registry, "sluice.evictions", "In-memory keys evicted", tags.and("kind", "busy"),
          limiter, l -> l.stats().evictedBusy());
      gauge(registry, "sluice.circuit.open", "1 while the circuit breaker keeps calls away from"
          + " the store", tags, limiter, l -> l.stats().breakerOpen() ? 1 : 0);
      gauge(registry, "sluice.keys", "Keys held in memory", tags, limiter,
          l -> l.stats().keysHeld());
      if (limiter.stats().leases() == null || limiter.stats().leases() == LeaseStats.NONE) {
        return;   // not in fleet mode: no lease meters that would stay at zero
      }
      ToDoubleFunction<RateLimiter> calls = l -> lease(l).leaseCalls();
      counter(registry, "sluice.lease.calls", "Lease and release calls (fleet mode)", tags,
          limiter, calls);
      counter(registry, "sluice.lease.units.granted", "Units granted by leases", tags, limiter,
          l -> lease(l).unitsGranted());
      counter(registry, "sluice.lease.units.returned", "Units given back unspent", tags, limiter,
          l -> lease(l).unitsReturned());
      counter(registry, "sluice.lease.units.stranded", "Units neither spent nor given back",
          tags, limiter, l -> lease(l).unitsStranded());
      counter(registry, "sluice.lease.units.spent", "Units admitted from leases", tags, limiter,
          l -> lease(l).unitsSpent());
      counter(registry, "sluice.lease.local.rejections", "Rejections of hot keys answered"
          + " locally", tags, limiter, l -> lease(l).localRejections());
      counter(registry, "sluice.lease.units.reconciled", "Units admitted during an outage and"
          + " charged afterwards", tags, limiter, l -> lease(l).unitsReconciled());
      gauge(registry, "sluice.lease.units.held", "Units held now", tags, limiter,
          l -> lease(l).unitsHeld());
      gauge(registry, "sluice.lease.keys", "Keys with a lease", tags, limiter,
          l -> lease(l).keysLeased());
      gauge(registry, "sluice.lease.instances", "Instances the fleet counts", tags, limiter,
          l -> lease(l).instances());
    };
  }

  /**
   * A binder of a {@link ConcurrencyLimiter}'s stats, tagged {@code limiter=<name>}:
   * {@code sluice.concurrency.acquired}, {@code sluice.concurrency.refused{reason}} (one per
   * {@link Refusal}, lower case: {@code full}, {@code shed}, {@code queue_full}, ...),
   * {@code sluice.concurrency.ended{outcome}} ({@code success}, {@code dropped},
   * {@code ignored}, {@code expired}), {@code sluice.concurrency.store.errors} and
   * {@code sluice.concurrency.degraded} (counters); {@code sluice.concurrency.in.flight} (the
   * weight held), {@code sluice.concurrency.waiting}, {@code sluice.concurrency.keys} and
   * {@code sluice.concurrency.circuit.open} (gauges). By priority ({@code priority} = {@code
   * critical}, {@code normal} or {@code sheddable}): {@code sluice.concurrency.priority.waiting}
   * and {@code sluice.concurrency.priority.flows} (gauges: the flows fair queuing has seen within
   * its memory, summed over keys, an estimate; 0 without fair queuing),
   * {@code sluice.concurrency.priority.dispatched} (waiters given a permit) and
   * {@code sluice.concurrency.priority.refused} (counters); three series each, whatever the
   * number of flows or keys. For each of {@code keys} (a bounded set the
   * operator names: backends, routes), {@code sluice.concurrency.key.in.flight{key}} and
   * {@code sluice.concurrency.key.limit{key}} (gauges; on a store, in flight is the store's count,
   * one call per scrape, and -1 when the store fails), and for an adaptive limit its estimates,
   * {@code sluice.concurrency.key.no.load.latency{key}} (seconds) and
   * {@code sluice.concurrency.key.gradient{key}} (NaN for a fixed limit, or before they are
   * measured).
   *
   * @throws IllegalArgumentException if {@code name} or a key is blank
   */
  public static MeterBinder binder(ConcurrencyLimiter limiter, String name, String... keys) {
    Objects.requireNonNull(limiter, "limiter");
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank");
    }
    for (String key : keys) {
      if (key == null || key.isBlank()) {
        throw new IllegalArgumentException("a key to meter must not be blank but was "
            + (key == null ? "null" : "'" + key + "'"));
      }
    }
    List<String> metered = List.of(keys);
    return registry -> {
      Tags tags = Tags.of("limiter", name);
      FunctionCounter.builder("sluice.concurrency.acquired", limiter,
          l -> l.stats().acquired()).description("Permits acquired").tags(tags)
          .register(registry);
      for (Refusal why : Refusal.values()) {
        FunctionCounter.builder("sluice.concurrency.refused", limiter,
            l -> l.stats().refused(why)).description("Acquisitions refused, by reason")
            .tags(tags.and("reason", why.name().toLowerCase(Locale.ROOT))).register(registry);
      }
      for (Outcome outcome : Outcome.values()) {
        FunctionCounter.builder("sluice.concurrency.ended", limiter,
            l -> l.stats().ended(outcome)).description("Permits that ended, by outcome")
            .tags(tags.and("outcome", outcome.name().toLowerCase(Locale.ROOT)))
            .register(registry);
      }
      FunctionCounter.builder("sluice.concurrency.store.errors", limiter,
          l -> l.stats().storeErrors()).description("Calls to the shared store that failed")
          .tags(tags).register(registry);
      FunctionCounter.builder("sluice.concurrency.degraded", limiter,
          l -> l.stats().degraded()).description("Answers the store failure policy gave")
          .tags(tags).register(registry);
      concurrencyGauge(registry, "sluice.concurrency.in.flight", "Weight of the permits held",
          tags, limiter, l -> l.stats().inFlight());
      concurrencyGauge(registry, "sluice.concurrency.waiting", "Acquisitions waiting", tags,
          limiter, l -> l.stats().waiting());
      concurrencyGauge(registry, "sluice.concurrency.keys", "Keys held", tags, limiter,
          l -> l.stats().keys());
      concurrencyGauge(registry, "sluice.concurrency.circuit.open", "1 while the circuit breaker"
          + " keeps calls away from the store", tags, limiter,
          l -> l.stats().circuitOpen() ? 1 : 0);
      for (Priority p : Priority.values()) {
        Tags levelTags = tags.and("priority", p.name().toLowerCase(Locale.ROOT));
        concurrencyGauge(registry, "sluice.concurrency.priority.waiting", "Acquisitions waiting,"
            + " by priority", levelTags, limiter, l -> l.stats().waiting(p));
        concurrencyGauge(registry, "sluice.concurrency.priority.flows", "Flows fair queuing has"
            + " seen within its memory, by priority (an estimate, summed over keys)", levelTags,
            limiter, l -> l.stats().flows(p));
        FunctionCounter.builder("sluice.concurrency.priority.dispatched", limiter,
            l -> l.stats().dispatched(p)).description("Waiters given a permit, by priority")
            .tags(levelTags).register(registry);
        FunctionCounter.builder("sluice.concurrency.priority.refused", limiter,
            l -> l.stats().refused(p)).description("Acquisitions refused, by priority")
            .tags(levelTags).register(registry);
      }
      for (String key : metered) {
        Tags keyTags = tags.and("key", key);
        concurrencyGauge(registry, "sluice.concurrency.key.in.flight", "The key's weight in"
            + " flight", keyTags, limiter, l -> {
              try {
                return l.inFlight(key);
              } catch (RuntimeException e) {
                return -1;
              }
            });
        concurrencyGauge(registry, "sluice.concurrency.key.limit", "The key's limit", keyTags,
            limiter, l -> l.limit(key));
        concurrencyGauge(registry, "sluice.concurrency.key.no.load.latency", "The latency the"
            + " key's adaptive limit believes the backend has with no queue, seconds (NaN: none)",
            keyTags, limiter, l -> {
              AdaptiveLimit a = l.adaptiveLimit(key);
              return a == null ? Double.NaN : a.noLoadLatencyNanos() / 1e9;
            });
        concurrencyGauge(registry, "sluice.concurrency.key.gradient", "The factor the key's"
            + " adaptive limit last scaled itself by for its latency (1: no queue; NaN: none)",
            keyTags, limiter, l -> {
              AdaptiveLimit a = l.adaptiveLimit(key);
              return a == null ? Double.NaN : a.gradient();
            });
      }
    };
  }

  private static void concurrencyGauge(MeterRegistry registry, String name, String help,
      Tags tags, ConcurrencyLimiter limiter, ToDoubleFunction<ConcurrencyLimiter> f) {
    Gauge.builder(name, limiter, f).description(help).tags(tags).strongReference(true)
        .register(registry);
  }

  private static LeaseStats lease(RateLimiter l) {
    LeaseStats s = l.stats().leases();
    return s == null ? LeaseStats.NONE : s;
  }

  private static void counter(MeterRegistry registry, String name, String help, Tags tags,
      RateLimiter limiter, ToDoubleFunction<RateLimiter> f) {
    FunctionCounter.builder(name, limiter, f).description(help).tags(tags).register(registry);
  }

  private static void gauge(MeterRegistry registry, String name, String help, Tags tags,
      RateLimiter limiter, ToDoubleFunction<RateLimiter> f) {
    Gauge.builder(name, limiter, f).description(help).tags(tags).strongReference(true)
        .register(registry);
  }

  /** A limiter whose decisions are counted and timed. */
  private static final class Metered implements RateLimiter {
    private static final String[] OPERATIONS = {"tryAcquire", "check", "fillUp", "reserve", "acquire"};
    private static final int TRY_ACQUIRE = 0;
    private static final int CHECK = 1;
    private static final int FILL_UP = 2;
    private static final int RESERVE = 3;
    private static final int ACQUIRE = 4;

    private final RateLimiter delegate;
    private final String name;
    private final MeterRegistry registry;
    /** By deciding limit's name: the counter of operation × outcome × degraded (made on first use). */
    private final ConcurrentHashMap<String, Counter[]> counters = new ConcurrentHashMap<>();
    private final Timer[] timers = new Timer[OPERATIONS.length];

    Metered(RateLimiter delegate, String name, MeterRegistry registry) {
      this.delegate = delegate;
      this.name = name;
      this.registry = registry;
      for (int op = 0; op < OPERATIONS.length; op++) {
        timers[op] = Timer.builder("sluice.decision.duration")
            .description("Time of one decision, store round trip included")
            .tags("limiter", name, "operation", OPERATIONS[op]).register(registry);
      }
    }

    private Decision record(int operation, long start, Decision d) {
      timers[operation].record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
      boolean allowed = operation == FILL_UP ? !d.reachedCapacity() : d.isAllowed();
      int slot = operation * 4 + (allowed ? 0 : 2) + (d.isDegraded() ? 1 : 0);
      String limit = d.limit().name();
      Counter[] byLimit = counters.computeIfAbsent(limit, k -> new Counter[OPERATIONS.length * 4]);
      Counter c = byLimit[slot];
      if (c == null) {
        // a benign race: registering the same meter twice returns the same counter
        c = Counter.builder("sluice.decisions")
            .description("Decisions by operation, outcome, degraded and deciding limit")
            .tags("limiter", name, "operation", OPERATIONS[operation], "outcome",
                allowed ? "allowed" : "rejected", "degraded", Boolean.toString(d.isDegraded()),
                "limit", limit)
            .register(registry);
        byLimit[slot] = c;
      }
      c.increment();
      return d;
    }

    @Override
    public Decision tryAcquire(String key, double cost) {
      long start = System.nanoTime();
      return record(TRY_ACQUIRE, start, delegate.tryAcquire(key, cost));
    }

    @Override
    public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
      long start = System.nanoTime();
      return delegate.tryAcquireAsync(key, cost).thenApply(d -> record(TRY_ACQUIRE, start, d));
    }

    @Override
    public Decision check(String key, double cost) {
      long start = System.nanoTime();
      return record(CHECK, start, delegate.check(key, cost));
    }

    @Override
    public CompletableFuture<Decision> checkAsync(String key, double cost) {
      long start = System.nanoTime();
      return delegate.checkAsync(key, cost).thenApply(d -> record(CHECK, start, d));
    }

    @Override
    public Decision fillUp(String key, double cost) {
      long start = System.nanoTime();
      return record(FILL_UP, start, delegate.fillUp(key, cost));
    }

    @Override
    public CompletableFuture<Decision> fillUpAsync(String key, double cost) {
      long start = System.nanoTime();
      return delegate.fillUpAsync(key, cost).thenApply(d -> record(FILL_UP, start, d));
    }

    @Override
    public Decision reserve(String key, double cost) {
      long start = System.nanoTime();
      return record(RESERVE, start, delegate.reserve(key, cost));
    }

    @Override
    public CompletableFuture<Decision> reserveAsync(String key, double cost) {
      long start = System.nanoTime();
      return delegate.reserveAsync(key, cost).thenApply(d -> record(RESERVE, start, d));
    }

    @Override
    public Decision acquire(String key, double cost, Duration timeout) throws InterruptedException {
      long start = System.nanoTime();
      return record(ACQUIRE, start, delegate.acquire(key, cost, timeout));
    }

    @Override
    public CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout) {
      long start = System.nanoTime();
      return delegate.acquireAsync(key, cost, timeout).thenApply(d -> record(ACQUIRE, start, d));
    }

    @Override
    public void reset(String key) {
      delegate.reset(key);
    }

    @Override
    public List<Limit> limits() {
      return delegate.limits();
    }

    @Override
    public LimiterStats stats() {
      return delegate.stats();
    }

    @Override
    public void close() {
      delegate.close();
    }

    @Override
    public String toString() {
      return "metered(" + name + ", " + delegate + ")";
    }
  }
}

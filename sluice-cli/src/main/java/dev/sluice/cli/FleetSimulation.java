package dev.sluice.cli;

import dev.sluice.Clock;
import dev.sluice.Decision;
import dev.sluice.LeaseSettings;
import dev.sluice.LeaseStats;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Scheduler;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.spi.StoreReference;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/*
 * A fleet of gateways in virtual time (sluice fleet): one discrete-event loop, each gateway
 * running Sluice's own limiter (central: one store call per decision; fleet: leases) against a
 * store in this JVM that applies the real store operations (StoreReference) behind a model of a
 * store host: a one-way network delay each way and one server that serves calls first come, first
 * served, at a fixed rate. Past its rate a queue builds, and a call whose answer would come after
 * the limiter's timeout fails at the timeout (the store still runs it, as Redis would). An exact
 * in-process limiter fed the merged stream of arrivals is the oracle. Deterministic per seed: one
 * thread, events ordered by time and then by the order they were made.
 */
final class FleetSimulation {
  /** Results are kept per bucket of this many nanoseconds (100 ms). */
  static final long BUCKET = 100_000_000L;
  static final String KEY = "orders";
  static final String CLIENT = "client:";

  /** What to simulate. Rates are per second, times in seconds unless named otherwise. */
  record Settings(boolean leased, int instances, double baseRate, double peakRate, double stepAt,
      double rampSeconds, double seconds, double limitRate, double limitBurst,
      double storeCallsPerSecond, double oneWayMillis, double timeoutMillis, StoreFailure onFailure,
      LeaseSettings leases, int skewedInstances, double skewFactor, long seed, double outageAt,
      double outageSeconds, int clients, double clientRate, double clientBurst) {

    /** Each client's own limit (seed 002: GCRA rate 200, burst 400). */
    Limit clientLimit() {
      return Limit.leakyBucket(clientBurst, Rate.perSecond(clientRate)).named("client");
    }

    /** Whether the store is unreachable at {@code nanos}. */
    boolean down(long nanos) {
      return outageSeconds > 0 && nanos >= outageAt * 1e9 && nanos < (outageAt + outageSeconds) * 1e9;
    }

    Limit limit() {
      return Limit.leakyBucket(limitBurst, Rate.perSecond(limitRate)).named("backend");
    }

    /** The offered rate of the whole fleet at time t (seconds): base, a linear ramp, peak. */
    double offeredAt(double t) {
      if (t < stepAt) {
        return baseRate;
      }
      if (t >= stepAt + rampSeconds) {
        return peakRate;
      }
      return baseRate + (peakRate - baseRate) * (t - stepAt) / rampSeconds;
    }
  }

  /** Per 100 ms bucket: counts and latency histograms; and what the leases did. */
  static final class Result {
    final Settings settings;
    final int buckets;
    final long[] offered;
    final long[] admitted;
    final long[] oracle;
    final long[] storeCalls;
    final long[] degraded;
    final Histogram[] storeLatency;
    final Histogram[] decisionLatency;
    LeaseStats leases = LeaseStats.NONE;
    /** Units the gateways held when the outage began; admitted while it lasted. */
    long heldAtOutage;
    long outageAdmitted;
    long outageOracle;
    long wallNanos;
    long events;

    Result(Settings s) {
      settings = s;
      buckets = (int) Math.ceil(s.seconds() * 1e9 / BUCKET);
      offered = new long[buckets];
      admitted = new long[buckets];
      oracle = new long[buckets];
      storeCalls = new long[buckets];
      degraded = new long[buckets];
      storeLatency = new Histogram[buckets];
      decisionLatency = new Histogram[buckets];
      for (int i = 0; i < buckets; i++) {
        storeLatency[i] = new Histogram();
        decisionLatency[i] = new Histogram();
      }
    }

    String mode() {
      return settings.leased() ? "fleet" : "central";
    }

    /** The most admitted beyond the oracle over any window of {@code n} buckets. */
    long maxExcess(int n) {
      long most = Long.MIN_VALUE;
      long sum = 0;
      for (int i = 0; i < buckets; i++) {
        sum += admitted[i] - oracle[i];
        if (i >= n) {
          sum -= admitted[i - n] - oracle[i - n];
        }
        if (i >= n - 1) {
          most = Math.max(most, sum);
        }
      }
      return most;
    }

    /** Sum of a series over buckets [from, to). */
    static long sum(long[] series, int from, int to) {
      long s = 0;
      for (int i = Math.max(0, from); i < Math.min(series.length, to); i++) {
        s += series[i];
      }
      return s;
    }

    /** The first bucket at or after the step whose admitted rate reaches share of the limit. */
    double secondsToReach(double share) {
      int step = (int) (settings.stepAt() * 1e9 / BUCKET);
      for (int i = step; i < buckets; i++) {
        if (admitted[i] * (1e9 / BUCKET) >= share * settings.limitRate()) {
          return (i + 1 - settings.stepAt() * 1e9 / BUCKET) * BUCKET / 1e9;
        }
      }
      return Double.POSITIVE_INFINITY;
    }

    /** The buckets of the steady state: from a second after the ramp to the end. */
    int steadyFrom() {
      return (int) Math.ceil((settings.stepAt() + settings.rampSeconds() + 1) * 1e9 / BUCKET);
    }
  }

  /** Latencies on a log scale: 20 buckets a decade from 1 µs; zero has its own bucket. */
  static final class Histogram {
    private static final int PER_DECADE = 20;
    private final int[] counts = new int[2 + 8 * PER_DECADE];
    private long total;

    void add(long nanos) {
      int i = nanos < 1000 ? 0 : 1 + (int) Math.min(counts.length - 2,
          Math.floor(Math.log10(nanos / 1000.0) * PER_DECADE));
      counts[i]++;
      total++;
    }

    void addAll(Histogram other) {
      for (int i = 0; i < counts.length; i++) {
        counts[i] += other.counts[i];
      }
      total += other.total;
    }

    long count() {
      return total;
    }

    /** The quantile, in milliseconds (the upper edge of its bucket); 0 for local decisions. */
    double quantileMillis(double q) {
      if (total == 0) {
        return Double.NaN;
      }
      long rank = (long) Math.ceil(q * total);
      long seen = 0;
      for (int i = 0; i < counts.length; i++) {
        seen += counts[i];
        if (seen >= rank) {
          return i == 0 ? 0 : Math.pow(10, i / (double) PER_DECADE) / 1000.0;
        }
      }
      return Double.NaN;
    }
  }

  private record Event(long time, long seq, Runnable action, int instance) {}

  private final Settings settings;
  private final Result result;
  private final PriorityQueue<Event> events = new PriorityQueue<>((a, b) ->
      a.time != b.time ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
  private final Random random;
  private final List<RateLimiter> clientLimiters = new ArrayList<>();
  private final double[] weights;
  private final double weightSum;
  private long now;
  private long seq;

  private final Clock clock = new Clock() {
    @Override
    public long nanoTime() {
      return now;
    }

    @Override
    public void sleep(long nanos) {
      throw new UnsupportedOperationException("nothing sleeps in the simulation");
    }

    @Override
    public String toString() {
      return "virtual clock";
    }
  };

  private final Scheduler scheduler = (task, delayNanos) -> at(now + Math.max(1, delayNanos), task);

  private FleetSimulation(Settings settings) {
    this.settings = settings;
    this.result = new Result(settings);
    this.random = new Random(settings.seed());
    this.weights = new double[settings.instances()];
    double sum = 0;
    for (int i = 0; i < weights.length; i++) {
      weights[i] = i < settings.skewedInstances() ? settings.skewFactor() : 1;
      sum += weights[i];
    }
    this.weightSum = sum;
  }

  static Result run(Settings settings) {
    long wall = System.nanoTime();
    FleetSimulation sim = new FleetSimulation(settings);
    sim.loop();
    sim.result.wallNanos = System.nanoTime() - wall;
    return sim.result;
  }

  private void at(long time, Runnable action) {
    events.add(new Event(time, seq++, action, -1));
  }

  private int bucket(long t) {
    return (int) Math.min(result.buckets - 1, t / BUCKET);
  }

  private void loop() {
    Store store = new Store();
    List<RateLimiter> gateways = new ArrayList<>();
    for (int i = 0; i < settings.instances(); i++) {
      Sluice.Builder b = Sluice.builder().limit(settings.limit()).store(store).clock(clock)
          .scheduler(scheduler).onStoreFailure(settings.onFailure());
      if (settings.leased()) {
        b.leases(settings.leases().withInstances(settings.instances()));
      }
      gateways.add(b.build());
      if (settings.clients() > 0) {
        // Per-client limits: central mode asks the store (a second call per request, sent with
        // the first); fleet mode keeps them in each gateway's memory (seed 002's fix, step 1).
        Sluice.Builder c = Sluice.builder().limit(settings.clientLimit()).clock(clock)
            .scheduler(scheduler);
        if (settings.leased()) {
          c.maximumKeys(settings.clients());
        } else {
          c.store(store).onStoreFailure(settings.onFailure());
        }
        clientLimiters.add(c.build());
      }
    }
    RateLimiter oracle = Sluice.builder().limit(settings.limit()).clock(clock).build();
    RateLimiter clientOracle = settings.clients() > 0
        ? Sluice.builder().limit(settings.clientLimit()).clock(clock)
            .maximumKeys(settings.clients()).build()
        : null;
    long end = (long) (settings.seconds() * 1e9);
    for (int i = 0; i < gateways.size(); i++) {
      nextArrival(i);
    }
    if (settings.outageSeconds() > 0) {
      at((long) (settings.outageAt() * 1e9), () -> {
        for (RateLimiter g : gateways) {
          result.heldAtOutage += g.stats().leases().unitsHeld();
        }
      });
    }
    Event e;
    while ((e = events.poll()) != null && e.time < end) {
      now = e.time;
      result.events++;
      if (e.instance < 0) {
        e.action.run();
        continue;
      }
      int b = bucket(now);
      result.offered[b]++;
      String client = settings.clients() > 0 ? CLIENT + random.nextInt(settings.clients()) : null;
      // the oracle: one exact limiter for each, the client's charged only when both admit
      if ((client == null || clientOracle.check(client).isAllowed())
          && oracle.tryAcquire(KEY).isAllowed()) {
        if (client != null) {
          clientOracle.tryAcquire(client);
        }
        result.oracle[b]++;
        if (settings.down(now)) {
          result.outageOracle++;
        }
      }
      arrive(gateways.get(e.instance), client == null ? null : clientLimiters.get(e.instance),
          client);
      nextArrival(e.instance);
    }
    // the calls in flight land (no more arrivals), so that the gateways close with none pending
    while (store.pending > 0 && (e = events.poll()) != null) {
      if (e.instance < 0) {
        now = Math.max(now, e.time);
        e.action.run();
      }
    }
    now = Math.max(now, end);
    for (RateLimiter g : gateways) {
      LeaseStats s = g.stats().leases();
      g.close();
      LeaseStats after = g.stats().leases();
      result.leases = add(result.leases, s.unitsHeld(), after);
    }
  }

  /** One request at a gateway: its client's limit, then the global one. */
  private void arrive(RateLimiter gateway, RateLimiter clients, String client) {
    long sent = now;
    if (client == null) {
      whenDone(gateway.tryAcquireAsync(KEY, 1), d -> decided(d, sent));
    } else if (settings.leased()) {
      if (!clients.check(client).isAllowed()) {
        result.decisionLatency[bucket(now)].add(0);   // rejected by its client's limit, locally
        return;
      }
      whenDone(gateway.tryAcquireAsync(KEY, 1), d -> {
        if (d.isAllowed()) {
          clients.tryAcquire(client);
        }
        decided(d, sent);
      });
    } else {
      // both store calls at once; admitted when both admit (the naive design charges the global
      // limit even when the client's rejects)
      CompletableFuture<Decision> own = clients.tryAcquireAsync(client, 1);
      CompletableFuture<Decision> global = gateway.tryAcquireAsync(KEY, 1);
      whenDone(own.thenCombine(global, (c, g) -> c.isAllowed() ? g : c), d -> decided(d, sent));
    }
  }

  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private static void whenDone(CompletableFuture<Decision> f,
      Consumer<Decision> then) {
    if (f.isDone()) {
      then.accept(f.join());
    } else {
      f.thenAccept(then);
    }
  }

  private static LeaseStats add(LeaseStats sum, long heldAtEnd, LeaseStats s) {
    return new LeaseStats(sum.leaseCalls() + s.leaseCalls(),
        sum.leaseCallNanos() + s.leaseCallNanos(), sum.unitsGranted() + s.unitsGranted(),
        sum.unitsReturned() + s.unitsReturned(), sum.unitsStranded() + s.unitsStranded(),
        sum.unitsHeld() + heldAtEnd, sum.unitsSpent() + s.unitsSpent(),
        sum.localRejections() + s.localRejections(), sum.unitsReconciled() + s.unitsReconciled(),
        sum.keysLeased() + s.keysLeased(),
        s.instances());
  }

  private void decided(Decision d, long sent) {
    int b = bucket(now);
    if (d.isAllowed()) {
      result.admitted[b]++;
      if (settings.down(sent)) {
        result.outageAdmitted++;
      }
    }
    if (d.isDegraded()) {
      result.degraded[b]++;
    }
    result.decisionLatency[b].add(now - sent);
  }

  private void nextArrival(int instance) {
    double t = now / 1e9;
    double rate = settings.offeredAt(t) * weights[instance] / weightSum;
    if (rate <= 0) {
      return;
    }
    long gap = Math.max(1, (long) (-Math.log(1 - random.nextDouble()) / rate * 1e9));
    events.add(new Event(now + gap, seq++, null, instance));
  }

  /** The store host: real store operations behind a network delay and one FIFO server. */
  private final class Store implements DecisionStore {
    private final StoreReference reference = StoreReference.of(List.of(settings.limit()), 1_000_000);
    private final StoreReference clientReference = settings.clients() > 0
        ? StoreReference.of(List.of(settings.clientLimit()), 1_000_000) : null;
    private final Map<String, long[]> states = new HashMap<>();
    private final long oneWay = (long) (settings.oneWayMillis() * 1e6);
    private final long service = (long) (1e9 / settings.storeCallsPerSecond());
    private final long timeout = (long) (settings.timeoutMillis() * 1e6);
    private long serverFree;
    /** Asynchronous calls whose answer has not come back yet. */
    int pending;

    @Override
    public long ticksPerSecond() {
      return 1_000_000;
    }

    /** Runs the operation at {@code at} (nanos): one atomic step on the store's clock. */
    private Observation step(String key, StoreRequest request, long at) {
      long ticks = at / 1000;
      long[] before = states.getOrDefault(key, request.initialState());
      StoreReference ref = key.startsWith(CLIENT) ? clientReference : reference;
      long[] next = ref.next(before, ticks, request);
      if (ref.idleAfter(next, ticks) == 0) {
        states.remove(key);
      } else {
        states.put(key, next);
      }
      return new Observation(ticks, before);
    }

    @Override
    public Observation apply(String key, StoreRequest request) {
      result.storeCalls[bucket(now)]++;
      if (settings.down(now)) {
        throw new StoreUnavailableException("the store is down (simulated outage)", null);
      }
      return step(key, request, now);
    }

    @Override
    public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
      long sent = now;
      int b = bucket(sent);
      result.storeCalls[b]++;
      if (settings.down(sent)) {
        // connection refused: the failure comes back after a round trip
        CompletableFuture<Observation> f = new CompletableFuture<>();
        pending++;
        at(sent + 2 * oneWay, () -> {
          pending--;
          f.completeExceptionally(
              new StoreUnavailableException("the store is down (simulated outage)", null));
        });
        return f;
      }
      long start = Math.max(sent + oneWay, serverFree);
      serverFree = start + service;
      Observation seen = step(key, request, start);
      long answered = serverFree + oneWay;
      CompletableFuture<Observation> f = new CompletableFuture<>();
      pending++;
      if (answered - sent > timeout) {
        result.storeLatency[b].add(timeout);
        at(sent + timeout, () -> {
          pending--;
          f.completeExceptionally(new IllegalStateException(
              "command timed out after " + settings.timeoutMillis() + " ms"));
        });
      } else {
        result.storeLatency[b].add(answered - sent);
        at(answered, () -> {
          pending--;
          f.complete(seen);
        });
      }
      return f;
    }

    @Override
    public void reset(String key) {
      states.remove(key);
    }
  }
}

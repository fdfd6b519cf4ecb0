package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Combined decisions (DecisionStore.combinesDecisions): the tryAcquire calls that arrive on a key
 * while a call on it is in flight go as one lease, and every caller gets the decision it would
 * have had calling alone, one after the other, at the lease's clock reading.
 */
class CombinerTest {
  private final EngineInternalsTest.TestClock clock = new EngineInternalsTest.TestClock();
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  /**
   * A store in this JVM that combines: its asynchronous calls run on their own thread, its first
   * plain tryAcquire waits at a gate until the test opens it, and it can be down for leases.
   */
  static final class GatedStore implements DecisionStore {
    final InProcessStore inner;
    final CountDownLatch gate = new CountDownLatch(1);
    final AtomicInteger gated = new AtomicInteger();
    final AtomicInteger plainCalls = new AtomicInteger();
    final List<Long> leaseCounts = new ArrayList<>();
    volatile boolean leasesDown;
    private final ExecutorService async = Executors.newSingleThreadExecutor();

    GatedStore(List<Limit> limits, Clock clock) {
      inner = new InProcessStore(limits, clock);
    }

    @Override
    public boolean combinesDecisions() {
      return true;
    }

    @Override
    public long ticksPerSecond() {
      return inner.ticksPerSecond();
    }

    @Override
    public Observation apply(String key, StoreRequest request) {
      if (request.operation() == Operation.LEASE) {
        synchronized (leaseCounts) {
          leaseCounts.add(request.count());
        }
        if (leasesDown) {
          throw new StoreUnavailableException("down for leases", null);
        }
      } else {
        plainCalls.incrementAndGet();
        if (gated.getAndIncrement() == 0) {
          try {
            gate.await();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        }
      }
      return inner.apply(key, request);
    }

    @Override
    public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
      return CompletableFuture.supplyAsync(() -> apply(key, request), async);
    }

    @Override
    public void reset(String key) {
      inner.reset(key);
    }

    @Override
    public void close() {
      async.shutdownNow();
    }
  }

  /** Starts {@code n} callers of tryAcquire(key, cost) once the first call holds the gate. */
  private List<Future<Decision>> callers(RateLimiter limiter, GatedStore store, String key,
      int n, double cost) throws Exception {
    List<Future<Decision>> out = new ArrayList<>();
    out.add(threads.submit(() -> limiter.tryAcquire(key, cost)));
    await(() -> store.gated.get() == 1);
    for (int i = 0; i < n; i++) {
      out.add(threads.submit(() -> limiter.tryAcquire(key, cost)));
    }
    return out;
  }

  private static void await(java.util.function.BooleanSupplier condition) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met in 30 s");
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  private static Combiner combiner(RateLimiter limiter) {
    return ((StoreRateLimiter) limiter).combiner();
  }

  @Test
  void callersBehindACallInFlight_goAsOneLease_andEachDecidesAsIfAlone() throws Exception {
    List<Limit> limits = List.of(Limit.leakyBucket(10, Rate.perSecond(3)));
    GatedStore store = new GatedStore(limits, clock);
    RateLimiter limiter = Sluice.builder().limits(limits.toArray(Limit[]::new)).store(store).clock(clock).build();
    List<Future<Decision>> calls = callers(limiter, store, "hot", 20, 1);
    await(() -> combiner(limiter).waiting() == 20);
    store.gate.countDown();
    List<Decision> decisions = new ArrayList<>();
    for (Future<Decision> f : calls) {
      decisions.add(f.get(30, TimeUnit.SECONDS));
    }

    assertThat(store.plainCalls).as("the call in flight, alone").hasValue(1);
    assertThat(store.leaseCounts).as("the 20 behind it, as one lease").containsExactly(20L);
    assertThat(decisions.stream().filter(Decision::isAllowed)).hasSize(10);
    assertThat(store.inner.level("hot")).isEqualTo(10);
    // the same figures as ten admissions and eleven rejections one after the other
    RateLimiter alone = Sluice.builder().limits(limits.toArray(Limit[]::new))
        .store(new InProcessStore(limits, clock)).clock(clock).build();   // a store that does not combine
    List<List<Object>> expected = new ArrayList<>();
    for (int i = 0; i < 21; i++) {
      expected.add(figures(alone.tryAcquire("hot")));
    }
    assertThat(decisions.stream().map(CombinerTest::figures))
        .containsExactlyInAnyOrderElementsOf(expected);
    assertThat(combiner(limiter).lanes()).as("no lane left once every call ended").isZero();
  }

  @Test
  void asynchronousCallers_joinTheBatchToo_andHoldNoThread() throws Exception {
    List<Limit> limits = List.of(Limit.leakyBucket(4, Rate.perSecond(1)));
    GatedStore store = new GatedStore(limits, clock);
    RateLimiter limiter = Sluice.builder().limits(limits.toArray(Limit[]::new)).store(store)
        .clock(clock).build();
    List<Future<Decision>> first = callers(limiter, store, "hot", 0, 1);
    List<CompletableFuture<Decision>> async = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      async.add(limiter.tryAcquireAsync("hot", 1));
    }
    assertThat(combiner(limiter).waiting()).isEqualTo(6);
    assertThat(async).noneMatch(CompletableFuture::isDone);
    store.gate.countDown();
    assertThat(first.get(0).get(30, TimeUnit.SECONDS).isAllowed()).isTrue();
    long admitted = 0;
    for (CompletableFuture<Decision> f : async) {
      admitted += f.get(30, TimeUnit.SECONDS).isAllowed() ? 1 : 0;
    }
    assertThat(admitted).as("4 in all, the first among them").isEqualTo(3);
    assertThat(store.leaseCounts).containsExactly(6L);
    await(() -> combiner(limiter).lanes() == 0);
  }

  @Test
  void aBatchWhoseCallFails_degradesEachCaller_andCountsOneStoreError() throws Exception {
    List<Limit> limits = List.of(Limit.leakyBucket(10, Rate.perSecond(1)));
    GatedStore store = new GatedStore(limits, clock);
    RateLimiter limiter = Sluice.builder().limits(limits.toArray(Limit[]::new)).store(store).clock(clock)
        .onStoreFailure(StoreFailure.FAIL_CLOSED)
        .circuitBreaker(CircuitBreakerSettings.defaults().withConsecutiveUnavailable(3)).build();
    store.leasesDown = true;
    List<Future<Decision>> calls = callers(limiter, store, "hot", 8, 1);
    await(() -> combiner(limiter).waiting() == 8);
    store.gate.countDown();
    assertThat(calls.get(0).get(30, TimeUnit.SECONDS).isAllowed()).isTrue();
    for (Future<Decision> f : calls.subList(1, calls.size())) {
      Decision d = f.get(30, TimeUnit.SECONDS);
      assertThat(d.isAllowed()).isFalse();
      assertThat(d.isDegraded()).isTrue();
    }
    assertThat(limiter.stats().storeErrors()).as("one failed call").isEqualTo(1);
    assertThat(limiter.stats().degradedDecisions()).isEqualTo(8);
    assertThat(limiter.stats().breakerOpen()).as("one unreachable call, not the 3 in a row that open it")
        .isFalse();
    assertThat(store.inner.level("hot")).as("only the call that succeeded charged").isEqualTo(1);
  }

  @Test
  void anotherCost_orAFullBatch_callsAlone() throws Exception {
    List<Limit> limits = List.of(Limit.leakyBucket(1000, Rate.perSecond(1)));
    GatedStore store = new GatedStore(limits, clock);
    RateLimiter limiter = Sluice.builder().limits(limits.toArray(Limit[]::new)).store(store).clock(clock).build();
    List<Future<Decision>> calls = callers(limiter, store, "hot", 3, 1);
    await(() -> combiner(limiter).waiting() == 3);
    Decision other = limiter.tryAcquire("hot", 2);   // not blocked: it goes alone
    assertThat(other.isAllowed()).isTrue();
    store.gate.countDown();
    for (Future<Decision> f : calls) {
      assertThat(f.get(30, TimeUnit.SECONDS).isAllowed()).isTrue();
    }
    assertThat(store.plainCalls).hasValue(2);
    assertThat(store.leaseCounts).containsExactly(3L);
    assertThat(store.inner.level("hot")).isEqualTo(6);
  }

  @Test
  void limitsThatALeaseCannotStandFor_areNeverCombined() {
    GatedStore store = new GatedStore(List.of(Limit.leakyBucket(5, Rate.perSecond(1))), clock);
    for (List<Limit> limits : List.of(
        List.of(Limit.leakyBucket(5, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(1))),
        List.of(Limit.fixedWindow(5, Duration.ofSeconds(1))),
        List.of(Limit.leakyBucket(5, Rate.perSecond(1)), Limit.slidingWindow(5, Duration.ofSeconds(1))))) {
      RateLimiter l = Sluice.builder().limits(limits.toArray(Limit[]::new)).store(store).clock(clock).build();
      assertThat(combiner(l)).as("%s", limits).isNull();
    }
    RateLimiter buckets = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1)))
        .limit(Limit.gcra(Rate.perSecond(2), 3)).store(store).clock(clock).build();
    assertThat(combiner(buckets)).isNotNull();
    RateLimiter plain = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1)))
        .store(new InProcessStore(List.of(Limit.leakyBucket(5, Rate.perSecond(1))), clock))
        .clock(clock).build();
    assertThat(combiner(plain)).as("a store that does not combine").isNull();
  }

  /**
   * The equivalence the combiner rests on: a lease of n grains of a cost takes, from random
   * states of buckets at scales 1 and above, exactly what n tryAcquires of that cost one after
   * the other admit at the same instant, and leaves the same state; splitBatch hands each of
   * them the state the one before left.
   */
  @Test
  void aLeaseOfNGrains_isNTryAcquiresInARow() {
    Random random = new Random(27);
    List<List<Limit>> sets = List.of(
        List.of(Limit.leakyBucket(5, Rate.perSecond(3))),
        List.of(Limit.leakyBucket(5, Rate.perSecond(3)), Limit.leakyBucket(10, Rate.perSecond(6))),
        List.of(Limit.leakyBucket(3, Rate.perSecond(1.5)), Limit.gcra(Rate.perSecond(1000), 5)),
        List.of(Limit.tokenBucket(5, Rate.perMinute(7)), Limit.leakyBucket(10, Rate.perSecond(300_000))),
        List.of(Limit.leakyBucket(1000, Rate.perDay(1e12))));
    double[] costs = {1, 0.5, 0.1, 2.75, 1e-7, 3, 0.333333};
    for (List<Limit> set : sets) {
      CompiledLimit[] limits = set.stream().map(l -> l.compile(1_000_000L))
          .toArray(CompiledLimit[]::new);
      assertThat(StoreRateLimiter.combinable(limits)).isTrue();
      long now = 1_000_000_000L;
      long[] state = Engine.initialState(limits);
      for (int step = 0; step < 5_000; step++) {
        now += random.nextInt(4) == 0 ? 0 : random.nextInt(400_000);
        double cost = costs[random.nextInt(costs.length)];
        int n = 1 + random.nextInt(40);
        long[] leased = new long[state.length];
        long granted = Engine.lease(limits, state, now, Engine.LEASE, cost, n, leased);
        Observation[] each = StoreRateLimiter.splitBatch(limits, new Observation(now, state),
            cost, n);
        long[] s = state;
        int admitted = 0;
        for (int i = 0; i < n; i++) {
          assertThat(each[i].now()).isEqualTo(now);
          assertThat(each[i].stateBefore()).as("%s step %d caller %d", set, step, i)
              .containsExactly(s);
          long[] next = new long[s.length];
          if (Engine.decide(limits, s, now, Engine.TRY_ACQUIRE, cost, next).isAllowed()) {
            admitted++;
          }
          s = next;
        }
        assertThat(admitted).as("%s step %d", set, step).isEqualTo(granted);
        assertThat(leased).as("%s step %d: the lease leaves what the calls leave", set, step)
            .containsExactly(s);
        state = random.nextInt(3) == 0 ? Engine.initialState(limits) : s;
      }
    }
  }

  private static List<Object> figures(Decision d) {
    return List.of(d.isAllowed(), d.remaining(), d.retryAfterNanos(), d.resetAfterNanos());
  }
}

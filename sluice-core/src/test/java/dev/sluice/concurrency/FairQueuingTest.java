package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Fair queuing among flows for a key's waiters, on virtual time unless threads race. */
class FairQueuingTest {
  private final TestTime time = new TestTime();

  private ConcurrencyLimiter limiter(int limit, FairQueuing fair) {
    return ConcurrencyLimiter.builder().limit(limit).clock(time).scheduler(time)
        .lease(Duration.ofHours(1)).maxWaiters(10_000).fairQueuing(fair).build();
  }

  private static CompletableFuture<Acquisition> waitFor(ConcurrencyLimiter l, String flow,
      int weight, Priority p) {
    return l.acquireAsync("k", flow, weight, p, Duration.ofMinutes(1));
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> FairQueuing.of(0, 1, 1))
        .hasMessage("queues must be between 1 and 65536 but was 0");
    assertThatThrownBy(() -> FairQueuing.of(64, 4, 1).withMemory(Duration.ZERO))
        .hasMessage("memory must be between 1ms and 1d but was PT0S");
    assertThatThrownBy(() -> FairQueuing.of(64, 4, 1).withMemory(Duration.ofDays(2)))
        .hasMessage("memory must be between 1ms and 1d but was PT48H");
    assertThat(FairQueuing.of(64, 4, 1).memory()).isEqualTo(FairQueuing.DEFAULT_MEMORY)
        .isEqualTo(Duration.ofSeconds(10));
    assertThat(FairQueuing.of(64, 4, 1).withMemory(Duration.ofSeconds(30)))
        .isEqualTo(FairQueuing.of(64, 4, 1).withMemory(Duration.ofSeconds(30)))
        .isNotEqualTo(FairQueuing.of(64, 4, 1))
        .hasToString("FairQueuing[queues=64, handSize=4, queueLength=1, memory=PT30S]");
    assertThatThrownBy(() -> FairQueuing.of(8, 9, 1))
        .hasMessage("handSize must be between 1 and 8 (at most the queues, 8) but was 9");
    assertThatThrownBy(() -> FairQueuing.of(64, 17, 1))
        .hasMessage("handSize must be between 1 and 16 (at most the queues, 64) but was 17");
    assertThatThrownBy(() -> FairQueuing.of(64, 4, 0))
        .hasMessage("queueLength must be between 1 and 1000000 but was 0");
    assertThatThrownBy(() -> ConcurrencyLimiter.builder().fairQueuing(null))
        .isInstanceOf(NullPointerException.class).hasMessage("fairQueuing");
  }

  @Test
  void aFlowsHand_isTheSameEachTime_distinct_andOfItsSize() {
    FairQueuing f = FairQueuing.of(64, 6, 10);
    Set<String> hands = new HashSet<>();
    for (int i = 0; i < 1_000; i++) {
      int[] hand = f.hand("tenant-" + i);
      assertThat(hand).hasSize(6).doesNotHaveDuplicates();
      assertThat(java.util.Arrays.stream(hand).allMatch(q -> q >= 0 && q < 64)).isTrue();
      assertThat(f.hand("tenant-" + i)).containsExactly(hand);
      hands.add(java.util.Arrays.toString(hand));
    }
    assertThat(hands).as("1,000 flows, their hands").hasSizeGreaterThan(990);
    assertThat(f.collisionOdds(0)).isZero();
    assertThat(f.collisionOdds(1)).isCloseTo(Math.pow(6 / 64.0, 6), org.assertj.core.data.Offset.offset(1e-12));
  }

  /** docs/concurrency.md's table of collision odds: the formula, value by value. */
  @Test
  void collisionOdds_areTheFormulas() {
    org.assertj.core.data.Percentage twoDigits = org.assertj.core.data.Percentage.withPercentage(2);   // the table shows two digits
    assertThat(FairQueuing.of(16, 3, 1).collisionOdds(5)).isCloseTo(0.27, twoDigits);
    assertThat(FairQueuing.of(64, 4, 1).collisionOdds(10)).isCloseTo(0.051, twoDigits);
    assertThat(FairQueuing.of(64, 6, 1).collisionOdds(1)).isCloseTo(6.8e-7, twoDigits);
    assertThat(FairQueuing.of(64, 6, 1).collisionOdds(20)).isCloseTo(0.41, twoDigits);
    assertThat(FairQueuing.of(128, 8, 1).collisionOdds(10)).isCloseTo(0.0026, twoDigits);
    assertThatThrownBy(() -> FairQueuing.of(64, 6, 1).collisionOdds(-1))
        .hasMessage("heavyFlows must be zero or more but was -1");
  }

  /**
   * Twenty flows have asked once each; then a flood of ten waiters from one flow, then one waiter
   * of a quiet flow: first in, first out would serve the quiet one eleventh; fair queuing serves
   * it after at most the flood's first four waiters (those before the flood asked over three
   * times what the typical flow asks; its hand of 4 then moves ahead as one stream).
   */
  @Test
  void aQuietFlow_isNotServedBehindAFlood() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(64, 4, 50));
    firstWaiter(l, 1);
    for (int i = 0; i < 20; i++) {
      grantedAtOnce(l, "flow-" + i);
    }
    Permit holder = l.tryAcquire("k").permit();
    List<CompletableFuture<Acquisition>> flood = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      flood.add(waitFor(l, "flood", 1, Priority.NORMAL));
    }
    CompletableFuture<Acquisition> quiet = waitFor(l, "quiet", 1, Priority.NORMAL);
    holder.close();
    int served = 0;
    while (!quiet.isDone()) {
      CompletableFuture<Acquisition> next = flood.stream().filter(f -> f.isDone()
          && f.join().permit().isActive()).findFirst().orElseThrow();
      next.join().permit().close();
      served++;
    }
    assertThat(served).as("flood waiters served before the quiet one").isLessThanOrEqualTo(4);
    assertThat(quiet.join().isAcquired()).isTrue();
  }

  /** The answer of a wait that must have ended (virtual time answers on the spot). */
  private static Acquisition served(CompletableFuture<Acquisition> wait) {
    assertThat(wait).as("answered").isDone();
    return wait.join();
  }

  /** A permit of {@code flow} granted at once (no wait), handed back. */
  private static void grantedAtOnce(ConcurrencyLimiter l, String flow) {
    Acquisition a = l.acquire("k", flow, 1, Priority.NORMAL, Duration.ZERO);
    assertThat(a.isAcquired()).as(flow + " at once").isTrue();
    a.permit().close();
  }

  /** Makes the key's fair queues (at their first waiter), then hands its permit back. */
  private void firstWaiter(ConcurrencyLimiter l, int limit) {
    Permit holder = l.tryAcquire("k", limit).permit();
    CompletableFuture<Acquisition> first = waitFor(l, "someone", 1, Priority.NORMAL);
    holder.close();
    served(first).permit().close();
  }

  /**
   * A flow that never queued (every one of its thirty requests granted at once) is still
   * remembered: when waits begin, a quiet flow that arrives after its waiter goes first. First in,
   * first out would serve the flood first.
   */
  @Test
  void aFloodThatNeverQueued_isRemembered_andWaitsBehindAQuietFlow() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(1024, 4, 50));
    firstWaiter(l, 1);
    for (int i = 0; i < 100; i++) {
      grantedAtOnce(l, "quiet-" + i);
      if (i % 3 == 0) {
        grantedAtOnce(l, "flood");
      }
      time.advance(10_000_000);   // 10 ms apart: a second in all, a tenth of the memory
    }
    Permit holder = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> flood = waitFor(l, "flood", 1, Priority.NORMAL);
    CompletableFuture<Acquisition> quiet = waitFor(l, "quiet-new", 1, Priority.NORMAL);
    holder.close();
    assertThat(served(quiet).isAcquired()).as("the quiet flow first").isTrue();
    assertThat(flood).isNotDone();
    quiet.join().permit().close();
    assertThat(served(flood).isAcquired()).isTrue();
  }

  /**
   * Light flows keep arrival order: twenty flows whose demands differ (one asks four times as
   * often as another), none over three times the typical flow's, are served first come, first
   * served, however the sketch's noise reads them. Their history spans six memories, so each
   * flow's demand is its steady rate.
   */
  @Test
  void lightFlows_areServedInArrivalOrder() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(64, 4, 50)
        .withMemory(Duration.ofMillis(100)));
    firstWaiter(l, 1);
    for (int round = 0; round < 60; round++) {
      for (int f = 0; f < 20; f++) {
        if (round % (1 + f % 4) == 0) {   // flow f asks every (1 + f % 4)th round
          grantedAtOnce(l, "flow-" + f);
        }
      }
      time.advance(10_000_000);
    }
    Permit holder = l.tryAcquire("k").permit();
    List<CompletableFuture<Acquisition>> waits = new ArrayList<>();
    for (int f = 19; f >= 0; f--) {   // the busiest flows' waiters interleaved with the quietest
      waits.add(waitFor(l, "flow-" + f, 1, Priority.NORMAL));
    }
    holder.close();
    for (int i = 0; i < waits.size(); i++) {
      assertThat(waits.get(i)).as("waiter %d served in its turn", i).isDone();
      for (int j = i + 1; j < waits.size(); j++) {
        assertThat(waits.get(j)).as("waiter %d still waits while %d holds", j, i).isNotDone();
      }
      waits.get(i).join().permit().close();
    }
  }

  /**
   * Demand decays by e every memory: a flood that stopped a hundred memories ago (its numbers
   * rebased on the way) is forgiven, and its new waiter keeps its place ahead of a later one.
   */
  @Test
  void aFloodThatStopped_isForgivenAfterItsMemory() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(64, 4, 50).withMemory(Duration.ofMillis(10)));
    firstWaiter(l, 1);
    for (int i = 0; i < 200; i++) {
      grantedAtOnce(l, "flood");
      grantedAtOnce(l, "quiet-" + i);
    }
    time.advance(1_000_000_000);   // a second: a hundred memories, e^100 past the rebase
    Permit holder = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> flood = waitFor(l, "flood", 1, Priority.NORMAL);
    CompletableFuture<Acquisition> quiet = waitFor(l, "quiet-new", 1, Priority.NORMAL);
    holder.close();
    assertThat(served(flood).isAcquired()).as("the forgiven flood, first come").isTrue();
    assertThat(quiet).isNotDone();
    flood.join().permit().close();
    assertThat(served(quiet).isAcquired()).isTrue();
  }

  /**
   * The stats by priority (the meters' source): waiting now, waiters dispatched, refusals, and
   * the flows active within the memory, each flow counting about once however often it asks.
   */
  @Test
  void stats_countEachPriority_andTheFlowsSeen() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(1024, 4, 2));
    Permit holder = l.tryAcquire("k").permit();
    List<CompletableFuture<Acquisition>> waits = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      waits.add(waitFor(l, "flow-" + i, 1, Priority.NORMAL));
    }
    waits.add(waitFor(l, "flow-0", 1, Priority.NORMAL));   // flow-0 asks thrice in all
    waits.add(waitFor(l, "flow-0", 1, Priority.NORMAL));
    CompletableFuture<Acquisition> critical = waitFor(l, "ops", 1, Priority.CRITICAL);
    ConcurrencyStats s = l.stats();
    assertThat(s.waiting(Priority.NORMAL)).isEqualTo(7);
    assertThat(s.waiting(Priority.CRITICAL)).isEqualTo(1);
    assertThat(s.waiting()).isEqualTo(8);
    assertThat(s.flows(Priority.NORMAL)).as("five flows, flow-0 asking thrice: 1 + 1/2 + 1/3")
        .isCloseTo(5 + 1 / 2.0 + 1 / 3.0, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(s.flows(Priority.CRITICAL)).isEqualTo(1.0);
    assertThat(s.flows(Priority.SHEDDABLE)).isZero();
    holder.close();
    assertThat(served(critical).isAcquired()).isTrue();
    served(critical).permit().close();
    s = l.stats();
    assertThat(s.dispatched(Priority.CRITICAL)).isEqualTo(1);
    assertThat(s.dispatched(Priority.NORMAL)).isEqualTo(1);   // the next in line holds it now
    assertThat(s.waiting(Priority.NORMAL)).isEqualTo(6);
    assertThat(s.waiting(Priority.CRITICAL)).isZero();
    time.advance(Duration.ofSeconds(10).toNanos());   // one memory: every flow's count decays by e
    assertThat(l.stats().flows(Priority.CRITICAL)).isCloseTo(Math.exp(-1),
        org.assertj.core.data.Offset.offset(1e-9));
    assertThat(l.acquire("k", "batch", 1, Priority.SHEDDABLE, Duration.ZERO).refusal())
        .isNotNull();
    assertThat(l.stats().refused(Priority.SHEDDABLE)).isEqualTo(1);
    assertThat(l.stats().refused(Priority.NORMAL)).isZero();
  }

  /**
   * Levels that lend are groups: two keys (levels) share a group of 2, each assured 1; a key's
   * waiters are fair among their flows, and a permit the other key leaves idle is lent.
   */
  @Test
  void withAGroup_eachKeysWaitersAreFairAmongFlows_andIdlePermitsAreLent() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().clock(time).scheduler(time)
        .lease(Duration.ofHours(1)).maxWaiters(100).fairQueuing(FairQueuing.of(64, 4, 50))
        .group(ConcurrencyGroup.sharing(2).assured(1).reserve(0)).build();
    Permit live = l.tryAcquire("live").permit();
    Permit borrowed = l.tryAcquire("batch").permit();
    assertThat(l.tryAcquire("batch").isAcquired()).as("the group is full").isFalse();
    for (int i = 0; i < 20; i++) {   // history: twenty flows waited, and went
      l.acquireAsync("batch", "flow-" + i, 1, Priority.NORMAL, Duration.ofMinutes(1))
          .cancel(false);
    }
    List<CompletableFuture<Acquisition>> flood = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      flood.add(l.acquireAsync("batch", "flood", 1, Priority.NORMAL, Duration.ofMinutes(1)));
    }
    CompletableFuture<Acquisition> quiet =
        l.acquireAsync("batch", "quiet", 1, Priority.NORMAL, Duration.ofMinutes(1));
    live.close();   // live's idle permit is lent to batch's waiters
    int before = 0;
    while (!quiet.isDone()) {
      CompletableFuture<Acquisition> next = flood.stream().filter(f -> f.isDone()
          && f.join().permit().isActive()).findFirst().orElseThrow();
      next.join().permit().close();
      before++;
    }
    assertThat(served(quiet).isAcquired()).isTrue();
    assertThat(before).as("flood waiters served before the quiet one").isLessThanOrEqualTo(4);
    borrowed.close();
  }

  /**
   * Weights count among heavy flows: beside thirty flows that asked once, a flow asking for 2 at a
   * time gets half the turns of one asking for 1.
   */
  @Test
  void heavierWaiters_takeTurnsByTheirWeight() {
    ConcurrencyLimiter l = limiter(2, FairQueuing.of(64, 1, 50));
    firstWaiter(l, 2);
    for (int i = 0; i < 30; i++) {
      grantedAtOnce(l, "flow-" + i);
    }
    Permit holder = l.tryAcquire("k", 2).permit();
    List<CompletableFuture<Acquisition>> heavy = new ArrayList<>();
    List<CompletableFuture<Acquisition>> light = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      heavy.add(waitFor(l, "heavy", 2, Priority.NORMAL));
      light.add(waitFor(l, "light", 1, Priority.NORMAL));
    }
    holder.close();
    // serve one at a time: each grant is closed before the next, counting who got the turn
    int heavyTurns = 0;
    int lightTurns = 0;
    for (int turn = 0; turn < 6; turn++) {
      CompletableFuture<Acquisition> h = heavy.stream().filter(f -> f.isDone()
          && f.join().permit().isActive()).findFirst().orElse(null);
      List<CompletableFuture<Acquisition>> lights = light.stream().filter(f -> f.isDone()
          && f.join().permit().isActive()).toList();
      heavyTurns += h == null ? 0 : 1;
      lightTurns += lights.size();
      if (h != null) {
        h.join().permit().close();
      }
      lights.forEach(f -> f.join().permit().close());
    }
    assertThat(lightTurns).as("the light flow's grants").isGreaterThanOrEqualTo(2 * heavyTurns - 2);
  }

  @Test
  void aFlowsFullQueue_isRefusedQueueFull_andPrioritiesStayStrict() {
    ConcurrencyLimiter l = limiter(1, FairQueuing.of(1, 1, 2));
    Permit holder = l.tryAcquire("k").permit();
    CompletableFuture<Acquisition> a = waitFor(l, "a", 1, Priority.NORMAL);
    CompletableFuture<Acquisition> b = waitFor(l, "b", 1, Priority.NORMAL);
    assertThat(waitFor(l, "c", 1, Priority.NORMAL).join().refusal())
        .as("one queue of two, full").isEqualTo(Refusal.QUEUE_FULL);
    CompletableFuture<Acquisition> critical = waitFor(l, "c", 1, Priority.CRITICAL);
    holder.close();
    assertThat(critical.join().isAcquired()).as("critical first, whatever the tags").isTrue();
    assertThat(a).isNotDone();
    critical.join().permit().close();
    assertThat(a.join().isAcquired()).isTrue();
    a.join().permit().close();
    assertThat(b.join().isAcquired()).isTrue();
  }

  /** maxWaiters bounds a key's waiters in all, whatever their flows. */
  @Test
  void maxWaiters_boundsTheKeysWaitersInAll() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(1).clock(time).scheduler(time)
        .maxWaiters(3).fairQueuing(FairQueuing.of(64, 4, 50)).build();
    Permit holder = l.tryAcquire("k").permit();
    for (int i = 0; i < 3; i++) {
      assertThat(waitFor(l, "flow-" + i, 1, Priority.NORMAL)).isNotDone();
    }
    assertThat(waitFor(l, "flow-3", 1, Priority.NORMAL).join().refusal())
        .isEqualTo(Refusal.QUEUE_FULL);
    assertThat(l.waiting("k")).isEqualTo(3);
    holder.close();
  }

  /**
   * Eight threads, 100 flows, a limit of 2, every acquisition waiting: never more than 2 held,
   * every wait answered, every permit ended once, nobody left waiting.
   */
  @Test
  void manyThreadsAndFlows_neverPassTheLimit_andEveryWaitEnds() throws Exception {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(2).maxWaiters(1_000)
        .fairQueuing(FairQueuing.of(16, 3, 100)).build();
    AtomicInteger held = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicInteger granted = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> all = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      int seed = t;
      all.add(pool.submit(() -> {
        Random r = new Random(seed);
        go.await();
        for (int i = 0; i < 3_000; i++) {
          Acquisition a = l.acquire("k", "tenant-" + r.nextInt(100), 1, Priority.NORMAL,
              Duration.ofSeconds(30));
          assertThat(a.isAcquired()).as(String.valueOf(a.refusal())).isTrue();
          granted.incrementAndGet();
          most.accumulateAndGet(held.incrementAndGet(), Math::max);
          held.decrementAndGet();
          a.permit().close();
        }
        return null;
      }));
    }
    go.countDown();
    for (Future<?> f : all) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(most.get()).isLessThanOrEqualTo(2);
    assertThat(l.inFlight("k")).isZero();
    assertThat(l.waiting("k")).isZero();
    assertThat(l.stats().ended(Outcome.SUCCESS)).isEqualTo(granted.get());
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

/**
 * What every store must show for {@link Group groups} (hierarchical limits with borrowing): the
 * worked numbers of {@code docs/semantics.md}, seed 002's fairness example in virtual time, exact
 * accounting under many threads, and decision-by-decision agreement with the {@link GroupModel}
 * over random groups of several keys. A store module extends this class and supplies a factory
 * whose {@link LimiterFactory#createGroup} builds on its store.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class GroupSuite {
  /** For a store's test class, which extends this one. */
  protected GroupSuite() {}

  private static final long MS = 1_000_000L;

  /** The store under test. */
  protected abstract LimiterFactory factory();

  private final ManualClock clock = new ManualClock(1_000_000_000L);

  /** docs/semantics.md: parent 10 @ 10/s with reserve 4; each key assured 2 @ 1/s, ceiling 10. */
  private static Group worked() {
    return Group.sharing(Limit.leakyBucket(10, Rate.perSecond(10)).named("tenant"))
        .assured(Limit.leakyBucket(2, Rate.perSecond(1)).named("assured"))
        .ceiling(Limit.leakyBucket(10, Rate.perSecond(10)).named("ceiling"))
        .reserve(4)
        .by(key -> key.substring(0, key.indexOf('/')));
  }

  @Test
  public void workedNumbers_assuredThenBorrowedUntilTheReserve_thenOnlyAssured() {
    RateLimiter l = factory().createGroup(clock, worked());
    for (int i = 0; i < 2; i++) {
      Decision d = l.tryAcquire("t/a");
      assertThat(d.isAllowed()).isTrue();
      assertThat(d.isBorrowed()).as("within a's assured 2").isFalse();
    }
    for (int i = 0; i < 4; i++) {
      Decision d = l.tryAcquire("t/a");
      assertThat(d.isAllowed()).as("borrowed %s: the parent holds %s of the 6 borrowers may fill", i, 3 + i).isTrue();
      assertThat(d.isBorrowed()).isTrue();
    }
    Decision full = l.tryAcquire("t/a");
    assertThat(full.isAllowed()).as("the parent holds 6 = capacity 10 - reserve 4").isFalse();
    assertThat(full.isBorrowed()).isFalse();
    // assured path: a's assured bucket (2 of 2) needs 1 s; borrowed path: the parent needs 0.1 s
    assertThat(full.retryAfter()).isEqualTo(Duration.ofMillis(100));
    assertThat(full.remaining()).isZero();

    for (int i = 0; i < 2; i++) {
      Decision d = l.tryAcquire("t/b");
      assertThat(d.isAllowed()).as("b's assured request %s fills the reserve", i).isTrue();
      assertThat(d.isBorrowed()).isFalse();
      assertThat(d.perLimit().get(2).remaining()).isEqualTo(3 - i);
    }
    Decision b = l.tryAcquire("t/b");
    assertThat(b.isAllowed()).as("b above its assured limit, the parent at 8 > 6").isFalse();
    // borrowed path: the parent from 8 to 5 at 10/s: 0.3 s; assured path: 1 s
    assertThat(b.retryAfter()).isEqualTo(Duration.ofMillis(300));

    clock.advance(Duration.ofMillis(300));
    Decision later = l.tryAcquire("t/b");
    assertThat(later.isAllowed()).isTrue();
    assertThat(later.isBorrowed()).isTrue();
  }

  @Test
  public void check_changesNothing_andSaysWhatTryAcquireWould() {
    RateLimiter l = factory().createGroup(clock, worked());
    l.tryAcquire("t/a", 2);
    Decision c = l.check("t/a", 1);
    assertThat(c.isAllowed()).isTrue();
    assertThat(c.remaining()).as("the borrowed path: min(ceiling 8, 6 - 2)").isEqualTo(4);
    for (int i = 0; i < 5; i++) {
      assertThat(l.check("t/a", 4).isAllowed()).isTrue();
    }
    Decision d = l.tryAcquire("t/a", 4);
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.isBorrowed()).isTrue();
    assertThat(l.check("t/a", 1).isAllowed()).isFalse();
  }

  @Test
  public void reset_forgetsTheKey_butTheGroupKeepsWhatItAdmitted() {
    RateLimiter l = factory().createGroup(clock, worked());
    assertThat(l.tryAcquire("t/a", 2).isBorrowed()).isFalse();
    assertThat(l.tryAcquire("t/a", 4).isBorrowed()).isTrue();
    l.reset("t/a");
    Decision d = l.tryAcquire("t/a", 2);
    assertThat(d.isAllowed()).as("a's assured bucket is empty again").isTrue();
    assertThat(d.isBorrowed()).isFalse();
    assertThat(d.perLimit().get(2).remaining()).as("the parent still holds 6 + 2").isEqualTo(2);
  }

  @Test
  public void groupsAreIndependent_andFractionalCostsAreExact() {
    RateLimiter l = factory().createGroup(clock, worked());
    for (int i = 0; i < 24; i++) {
      assertThat(l.tryAcquire("t/a", 0.25).isAllowed()).as("request %s", i).isTrue();
    }
    assertThat(l.tryAcquire("t/a", 0.25).isAllowed()).as("6 units: the borrowers' part").isFalse();
    Decision u = l.tryAcquire("u/a", 6);
    assertThat(u.isAllowed()).as("group u is another parent").isTrue();
    assertThat(u.isBorrowed()).as("6 > assured 2: borrowed, up to 10 - 4").isTrue();
    Decision assured = l.tryAcquire("u/a", 2);
    assertThat(assured.isAllowed()).as("its assured 2 on top, into the reserve").isTrue();
    assertThat(assured.isBorrowed()).isFalse();
    assertThat(l.tryAcquire("u/a", 0.25).isAllowed()).isFalse();
  }

  @Test
  public void aCostNoPathCanEverAdmit_isNeverAdmissible() {
    RateLimiter l = factory().createGroup(clock, worked());
    Decision d = l.tryAcquire("t/a", 11);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isNeverAdmissible()).isTrue();
    Decision within = l.tryAcquire("t/a", 7);
    assertThat(within.isAllowed()).as("7 > assured 2 and > 10 - 4: neither path now or later").isFalse();
    assertThat(within.isNeverAdmissible()).isTrue();
  }

  @Test
  public void fillUpAndReserve_areRefused_withTheReason() {
    RateLimiter l = factory().createGroup(clock, worked());
    assertThatThrownBy(() -> l.fillUp("t/a", 1)).isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("fillUp is not available on a group");
    assertThatThrownBy(() -> l.reserve("t/a", 1)).isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("reserve is not available on a group");
  }

  @Test
  public void badGroupOfAKey_isTheCallersError_namingTheKey() {
    RateLimiter l = factory().createGroup(clock, worked());
    assertThatThrownBy(() -> l.tryAcquire("no-slash"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no-slash");
    assertThatThrownBy(() -> l.tryAcquire("/x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("\"/x\"");
  }

  @Test
  public void acquire_waitsForTheEarlierPath() throws InterruptedException {
    RateLimiter l = factory().createGroup(clock, worked());
    l.tryAcquire("t/a", 2);
    l.tryAcquire("t/a", 4);
    Decision d = l.acquire("t/a", 1, Duration.ofSeconds(1));
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.isBorrowed()).isTrue();
    assertThat(clock.nanoTime() - 1_000_000_000L).as("0.1 s of the parent's leak")
        .isEqualTo(100 * MS);
  }

  /**
   * Seed 002: the service 1,000/s, each client assured 100/s with a 1,000/s ceiling. Clients send
   * 1,250/s each, evenly interleaved; each phase runs 1.2 s and counts its last second.
   */
  @Test
  public void seed002Fairness_aloneTakesTheIdleCapacity_twoShareIt_tenGetTheirAssuredRates() {
    Group g = Group.sharing(Limit.leakyBucket(100, Rate.perSecond(1000)))
        .assured(Limit.leakyBucket(10, Rate.perSecond(100)))
        .ceiling(Limit.leakyBucket(100, Rate.perSecond(1000)));
    long[] alone = phase(g, 1);
    assertThat(alone[0]).as("A alone, near the parent's 1,000/s").isBetween(990L, 1001L);
    long[] two = phase(g, 2);
    assertThat(two[0] + two[1]).as("A and B together").isBetween(990L, 1001L);
    for (long each : two) {
      assertThat(each).as("A and B each: 100 assured + half of the 800 left").isBetween(450L, 550L);
    }
    long[] ten = phase(g, 10);
    long sum = 0;
    for (long each : ten) {
      assertThat(each).as("each of ten: its assured 100/s").isBetween(90L, 110L);
      sum += each;
    }
    assertThat(sum).isBetween(990L, 1001L);
  }

  /**
   * One phase on fresh state: {@code n} clients, 800 µs apart each, interleaved; returns each
   * client's admissions in the last second, and checks that what the group admitted over the
   * whole phase is within the parent's capacity plus its rate times the time, exactly.
   */
  private long[] phase(Group g, int n) {
    ManualClock c = new ManualClock(1_000_000_000L);
    RateLimiter l = factory().createGroup(c, g);
    long stepMicros = 800 / n;
    long steps = 1_200_000 / stepMicros;
    long[] counted = new long[n];
    long total = 0;
    long start = c.nanoTime();
    for (long k = 0; k < steps; k++) {
      c.advanceNanos(stepMicros * 1000);
      int client = (int) (k % n);
      if (l.tryAcquire("client-" + client).isAllowed()) {
        total++;
        if (c.nanoTime() - start > 200 * MS) {
          counted[client]++;
        }
      }
    }
    double bound = g.parent().capacity()
        + g.parent().rate().perSecond() * (c.nanoTime() - start) / 1e9;
    assertThat((double) total).as("admitted in %s s by %s clients", 1.2, n).isLessThanOrEqualTo(bound);
    return counted;
  }

  /**
   * Frozen time, 8 threads, 3 groups of 5 keys: every admission is charged to the key's group
   * exactly once. Per group, what was admitted equals the parent's level; borrowed admissions fit
   * in capacity minus reserve; per key, assured admissions fit its assured bucket.
   */
  @Test
  public void manyThreads_everyAdmissionChargesItsGroupExactlyOnce() throws Exception {
    Group g = Group.sharing(Limit.leakyBucket(400, Rate.perSecond(10)))
        .assured(Limit.leakyBucket(20, Rate.perSecond(1)))
        .ceiling(Limit.leakyBucket(150, Rate.perSecond(5)))
        .reserve(100)
        .by(key -> key.substring(0, 2));
    RateLimiter l = factory().createGroup(clock, g);
    int groups = 3;
    int keys = 5;
    AtomicLongArray assured = new AtomicLongArray(groups * keys);
    AtomicLongArray borrowed = new AtomicLongArray(groups * keys);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        done.add(pool.submit(() -> {
          ThreadLocalRandom r = ThreadLocalRandom.current();
          for (int i = 0; i < 500; i++) {
            int k = r.nextInt(groups * keys);
            int halves = 2 + r.nextInt(4);   // costs 1, 1.5, 2, 2.5, counted in halves
            Decision d = l.tryAcquire("g" + (k / keys) + "/" + (k % keys), halves / 2.0);
            if (d.isAllowed()) {
              (d.isBorrowed() ? borrowed : assured).addAndGet(k, halves);
            }
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    for (int gi = 0; gi < groups; gi++) {
      long sum = 0;
      long lent = 0;
      for (int k = gi * keys; k < (gi + 1) * keys; k++) {
        assertThat(assured.get(k)).as("key %s: assured within its 20", k).isLessThanOrEqualTo(40);
        assertThat(assured.get(k) + borrowed.get(k)).as("key %s within its ceiling 150", k)
            .isLessThanOrEqualTo(300);
        sum += assured.get(k) + borrowed.get(k);
        lent += borrowed.get(k);
      }
      List<Decision> each = l.check("g" + gi + "/fresh", 1).perLimit();
      double parentLevel = 400 - each.get(each.size() - 1).remaining();
      assertThat(sum / 2.0).as("group %s: admitted = the parent's level", gi).isEqualTo(parentLevel);
      assertThat(sum).as("group %s within the parent's 400", gi).isLessThanOrEqualTo(800);
      assertThat(lent).as("group %s: borrowed within 400 - 100", gi).isLessThanOrEqualTo(600);
    }
  }

  // -- decision-by-decision agreement with the model ----------------------------------------

  /** A group and the steps run against it. */
  public record Scenario(Group group, List<ModelProperties.Step> steps) {}

  @Property(tries = 200, edgeCases = EdgeCasesMode.NONE)
  public void store_agreesWithGroupModel_decisionByDecision(@ForAll("groups") Scenario scenario) {
    ManualClock c = new ManualClock(1_000_000_000L);
    RateLimiter store = factory().createGroup(c, scenario.group());
    GroupModel model = new GroupModel(scenario.group(), factory().ticksPerSecond());
    int i = 0;
    for (ModelProperties.Step step : scenario.steps()) {
      i++;
      long now = c.nanoTime();
      GroupModel.Expected expected;
      Decision actual;
      switch (step.op()) {
        case "advance":
          c.advanceNanos(step.nanos());
          continue;
        case "reset":
          store.reset(step.key());
          model.reset(step.key());
          continue;
        case "check":
          actual = store.check(step.key(), step.cost());
          expected = model.check(step.key(), step.cost(), now);
          break;
        default:
          actual = store.tryAcquire(step.key(), step.cost());
          expected = model.tryAcquire(step.key(), step.cost(), now);
      }
      assertThat(GroupModel.Expected.of(actual)).as("step %s: %s at %sns", i, step, now)
          .isEqualTo(expected);
    }
  }

  private static double quarters(double units) {
    return Math.max(0.25, Math.floor(units * 4) / 4);
  }

  @Provide
  Arbitrary<Scenario> groups() {
    // rates whose unit is a whole number of microseconds, costs and capacities in quarters
    Arbitrary<Integer> parentRate = Arbitraries.of(100, 200, 400, 1000);
    Arbitrary<Integer> share = Arbitraries.of(2, 4, 5, 10);
    Arbitrary<Integer> parentQuarters = Arbitraries.integers().between(8, 160);
    Arbitrary<Integer> ceilings = Arbitraries.integers().between(0, 2);
    Arbitrary<Integer> reservePercent = Arbitraries.of(0, 25, 50, 75);
    Arbitrary<Group> group = Combinators.combine(parentRate, share, parentQuarters, ceilings,
        reservePercent).as((rate, s, pq, nc, rp) -> {
          double parentCapacity = pq * 0.25;
          double assuredCapacity = Math.max(0.25, Math.floor(pq / (double) s) * 0.25);
          Group grp = Group.sharing(Limit.leakyBucket(parentCapacity, Rate.perSecond(rate)))
              .assured(Limit.leakyBucket(assuredCapacity, Rate.perSecond(rate / s)))
              .reserve(Math.floor(pq * rp / 100.0) * 0.25)
              .by(key -> key.substring(0, 1));
          if (nc == 1) {
            grp = grp.ceiling(Limit.leakyBucket(Math.max(assuredCapacity, quarters(parentCapacity / 2)),
                Rate.perSecond(rate / 2)));
          } else if (nc == 2) {
            grp = grp.ceiling(Limit.leakyBucket(parentCapacity, Rate.perSecond(rate)),
                Limit.leakyBucket(Math.max(assuredCapacity, quarters(parentCapacity / 4)),
                    Rate.of(rate / s * 60.0, Duration.ofMinutes(1))));
          }
          return grp;
        });
    Arbitrary<String> op = Arbitraries.of("tryAcquire", "tryAcquire", "tryAcquire", "tryAcquire",
        "check", "advance", "advance", "reset");
    Arbitrary<String> key = Arbitraries.of("a1", "a2", "a3", "b1", "b2");
    Arbitrary<Double> cost = Arbitraries.integers().between(1, 24).map(q -> q * 0.25);
    Arbitrary<Long> micros = Arbitraries.frequencyOf(
        Tuple.of(6, Arbitraries.longs().between(1, 20_000)),
        Tuple.of(3, Arbitraries.longs().between(1, 500_000)),
        Tuple.of(1, Arbitraries.longs().between(500_000, 5_000_000)));
    Arbitrary<List<ModelProperties.Step>> steps = Combinators.combine(op, key, cost, micros)
        .as((o, k, c, m) -> new ModelProperties.Step(o, k, c, m * 1000))
        .list().ofMinSize(1).ofMaxSize(80);
    return Combinators.combine(group, steps).as(Scenario::new);
  }
}

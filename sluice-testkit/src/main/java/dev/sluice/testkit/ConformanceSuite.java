package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.KeyLimiter;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every store must show, as JUnit tests. A store module extends this class and
 * supplies {@link #factory()}; nothing else. Times here are whole microseconds so that stores of
 * either resolution give the same figures.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class ConformanceSuite {
  /** For a store's test class, which extends this one. */
  protected ConformanceSuite() {}

  /** Levels are exact to one tick of leak: 1e-6 units in memory, a few µs of leak in Redis/SQL. */
  private final double EPS = Math.max(1e-6, 4.0 / factory().ticksPerSecond());

  /** The store under test. */
  protected abstract LimiterFactory factory();

  protected final ManualClock clock = new ManualClock(0);

  protected RateLimiter limiter(Limit... limits) {
    return factory().create(clock, List.of(limits));
  }

  private void at(double seconds) {
    clock.set(Math.round(seconds * 1e9));
  }

  private static long nanos(double seconds) {
    return Math.round(seconds * 1e9);
  }

  // ------------------------------------------------------------------ seed timelines

  /** Seed 000's plot: capacity 3, leak 1.5/s, fill-ups at 1, 1.7, 2, 2.3 and 6 seconds. */
  @Test
  public void seed000_fillUpTimeline_levelsAndFullEvents() {
    RateLimiter b = limiter(Limit.leakyBucket(3, Rate.perSecond(1.5)));
    at(1.0);
    Decision d = b.fillUp("k", 1);
    assertThat(d.level()).isCloseTo(1.0, within(EPS));
    assertThat(d.reachedCapacity()).isFalse();
    at(1.7);   // 1 - 0.7 * 1.5 < 0: empty since 1.667 s, then +2
    d = b.fillUp("k", 2);
    assertThat(d.level()).isCloseTo(2.0, within(EPS));
    at(2.0);
    assertThat(b.check("k", 0.001).level()).isCloseTo(1.55, within(EPS));
    d = b.fillUp("k", 1);
    assertThat(d.level()).isCloseTo(2.55, within(EPS));
    assertThat(d.reachedCapacity()).isFalse();
    at(2.3);   // 2.55 - 0.45 + 2 = 4.1: clamped to 3, the "full" event
    d = b.fillUp("k", 2);
    assertThat(d.level()).isCloseTo(3.0, within(EPS));
    assertThat(d.reachedCapacity()).isTrue();
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.resetAfterNanos()).isCloseTo(nanos(2.0), within(2L));   // 3 / 1.5
    at(4.3);
    assertThat(b.check("k", 0.001).level()).isCloseTo(0.0, within(EPS));
    at(6.0);   // exactly capacity: full again
    d = b.fillUp("k", 3);
    assertThat(d.level()).isCloseTo(3.0, within(EPS));
    assertThat(d.reachedCapacity()).isTrue();
  }

  /** Seed 001's two-user timeline: capacity 1, one leak per 2 seconds, per-user buckets. */
  @Test
  public void seed001_twoUsers_ownBuckets() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.of(1, Duration.ofSeconds(2))));
    Object[][] timeline = {
        {0.000, "bob", true}, {0.999, "bob", false},
        {1.000, "alice", true}, {1.000, "alice", false}, {1.001, "alice", false},
        {2.001, "alice", false}, {2.001, "bob", true}, {2.001, "bob", false},
        {3.002, "alice", true}, {3.003, "alice", false},
    };
    for (Object[] step : timeline) {
      at((double) step[0]);
      assertThat(l.tryAcquire((String) step[1]).isAllowed())
          .as("%s at %ss", step[1], step[0]).isEqualTo(step[2]);
    }
  }

  /** Seed 003: 10 calls per 10 s; the 11th waits for the next drip. */
  @Test
  public void seed003_tenPerTenSeconds_retryAfterIsTimeToNextDrip() {
    RateLimiter l = limiter(Limit.leakyBucket(10, Rate.of(10, Duration.ofSeconds(10))));
    for (int i = 0; i < 10; i++) {
      assertThat(l.tryAcquire("ip-127.0.0.1").isAllowed()).as("call %s", i + 1).isTrue();
    }
    at(0.220877);
    Decision d = l.tryAcquire("ip-127.0.0.1");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isCloseTo(nanos(0.779123), within(2L));
    at(0.457641);
    assertThat(l.tryAcquire("ip-127.0.0.1").retryAfterNanos()).isCloseTo(nanos(0.542359), within(2L));
    at(1.0);
    assertThat(l.tryAcquire("ip-127.0.0.1").isAllowed()).isTrue();
  }

  /** Seed 001's queue: rate 1/s, room for 2; C is rejected, D fits after one leak. */
  @Test
  public void seed001_queue_delaysToConstantRate() {
    RateLimiter q = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    Decision a = q.reserve("k");
    Decision b = q.reserve("k");
    Decision c = q.reserve("k");
    assertThat(a.isAllowed()).isTrue();
    assertThat(a.delayNanos()).isZero();
    assertThat(b.isAllowed()).isTrue();
    assertThat(b.delayNanos()).isEqualTo(nanos(1));
    assertThat(c.isAllowed()).isFalse();
    assertThat(c.retryAfterNanos()).isEqualTo(nanos(1));
    at(1.0);
    Decision d = q.reserve("k");
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.delayNanos()).isEqualTo(nanos(1));   // departs at 2 s, after B
    at(4.0);
    Decision e = q.reserve("k");
    assertThat(e.isAllowed()).isTrue();
    assertThat(e.delayNanos()).isZero();
  }

  // ------------------------------------------------------------------ exact at every rate

  /**
   * At 3/s a unit is 333,333,333 1/3 ns (333,333 1/3 µs). 4.66 and 0.34 fill a bucket
   * of 5 exactly, as a queue and as a meter; the next hundredth waits exactly its leak.
   */
  @Test
  public void reserve_costsThatFillTheQueueExactly_allFit_atARateOfNoWholeTicks() {
    long tick = 1_000_000_000L / factory().ticksPerSecond();
    for (boolean queue : new boolean[] {true, false}) {
      clock.set(0);
      RateLimiter l = limiter(Limit.leakyBucket(5, Rate.perSecond(3)));
      Decision a = queue ? l.reserve("k", 4.66) : l.tryAcquire("k", 4.66);
      Decision b = queue ? l.reserve("k", 0.34) : l.tryAcquire("k", 0.34);
      assertThat(a.isAllowed()).isTrue();
      assertThat(b.isAllowed()).as("0.34 after 4.66 (queue %s)", queue).isTrue();
      // 4.66 / 3 s = 1.553333...: the second departs at the first whole tick after it
      long departs = Math.floorDiv(1_553_333_334L + tick - 1, tick) * tick;
      assertThat(b.delayNanos()).isEqualTo(queue ? departs : 0);
      Decision c = queue ? l.reserve("k", 0.01) : l.tryAcquire("k", 0.01);
      assertThat(c.isAllowed()).isFalse();
      long wait = Math.floorDiv(3_333_334L + tick - 1, tick) * tick;   // 0.01 / 3 s, rounded up
      assertThat(c.retryAfterNanos()).isEqualTo(wait);
      clock.set(wait - tick);
      assertThat((queue ? l.reserve("k", 0.01) : l.tryAcquire("k", 0.01)).isAllowed())
          .as("one tick early").isFalse();
      clock.set(wait);
      assertThat((queue ? l.reserve("k", 0.01) : l.tryAcquire("k", 0.01)).isAllowed())
          .as("after exactly retryAfter").isTrue();
    }
  }

  /**
   * Every store decides as {@link ExactBucketModel} (exact fractions, written from the documented
   * rules) at rates whose unit is a whole number of ticks and at rates where it is not (3/s,
   * 1.5/s, 7/s, 10^12/day), for random fractional costs, tryAcquire, reserve and check mixed:
   * the same admissions, retry-afters and delays to the tick. After each rejection, retrying one
   * tick before its retry-after is refused and retrying at exactly it is admitted.
   */
  @Test
  public void exactRationalModel_agreesAtEveryRate_andRetryAfterIsExact() {
    long tps = factory().ticksPerSecond();
    long tick = 1_000_000_000L / tps;
    Object[][] cases = {
        {5.0, 3.0, Duration.ofSeconds(1)}, {3.0, 1.5, Duration.ofSeconds(1)},
        {5.0, 7.0, Duration.ofSeconds(1)}, {10_000.0, 1e12, Duration.ofDays(1)},
        {10.0, 1000.0, Duration.ofSeconds(1)}, {4.0, 7.0, Duration.ofMinutes(1)}};
    Random random = new Random(30);
    for (Object[] c : cases) {
      double capacity = (double) c[0];
      double amount = (double) c[1];
      Duration period = (Duration) c[2];
      clock.set(0);
      RateLimiter l = limiter(Limit.leakyBucket(capacity, Rate.of(amount, period)));
      ExactBucketModel m = new ExactBucketModel(capacity, amount, period, tps);
      double unitTicks = period.toNanos() / (double) tick / amount;
      long now = 0;
      int rejections = 0;
      for (int step = 0; step < 300; step++) {
        int move = random.nextInt(4);
        now += move == 0 ? 0 : move == 1 ? 1 + random.nextInt(3)
            : 1 + (long) (random.nextDouble() * unitTicks * capacity / 3);
        clock.set(now * tick);
        // a cost of up to a third of the capacity, in thousandths of it (0.005 at 5, 3.337...)
        double cost = Math.round(capacity * (1 + random.nextInt(333))) / 1000.0;
        int op = random.nextInt(3);
        String what = String.format("%s @ %s per %s, step %d at tick %d: %s(%s)", capacity,
            amount, period, step, now, op == 0 ? "tryAcquire" : op == 1 ? "reserve" : "check",
            cost);
        Decision d = op == 0 ? l.tryAcquire("k", cost) : op == 1 ? l.reserve("k", cost)
            : l.check("k", cost);
        ExactBucketModel.Outcome o = op == 0 ? m.tryAcquire(cost, now)
            : op == 1 ? m.reserve(cost, now) : m.check(cost, now);
        assertThat(d.isAllowed()).as(what).isEqualTo(o.allowed());
        if (!o.allowed()) {
          assertThat(d.retryAfterNanos()).as(what + ": retryAfter").isEqualTo(o.retryAfterTicks() * tick);
          rejections++;
          long w = o.retryAfterTicks();
          clock.set((now + w - 1) * tick);
          assertThat(l.check("k", cost).isAllowed()).as(what + ": one tick early").isFalse();
          assertThat(m.check(cost, now + w - 1).allowed()).isFalse();
          now += w;
          clock.set(now * tick);
          Decision again = op == 1 ? l.reserve("k", cost) : l.tryAcquire("k", cost);
          ExactBucketModel.Outcome mo = op == 1 ? m.reserve(cost, now) : m.tryAcquire(cost, now);
          assertThat(again.isAllowed()).as(what + ": after exactly retryAfter").isTrue();
          assertThat(mo.allowed()).isTrue();
          assertThat(again.delayNanos()).as(what + ": delay").isEqualTo(mo.delayTicks() * tick);
        } else if (op == 1) {
          assertThat(d.delayNanos()).as(what + ": delay").isEqualTo(o.delayTicks() * tick);
        }
      }
      assertThat(rejections).as("%s per %s: the walk reached the capacity", amount, period)
          .isGreaterThan(10);
    }
  }

  /**
   * Two limits of one scale (3/s and 180/min: a unit is 1/3 s in both) queue exactly too; a
   * limit of another scale rounds the other's departure up to a whole tick, never down.
   */
  @Test
  public void severalLimits_reserve_sameScaleIsExact() {
    RateLimiter l = limiter(Limit.leakyBucket(5, Rate.perSecond(3)),
        Limit.leakyBucket(10, Rate.perMinute(180)));
    assertThat(l.reserve("k", 4.66).isAllowed()).isTrue();
    assertThat(l.reserve("k", 0.34).isAllowed()).isTrue();
    assertThat(l.reserve("k", 0.01).isAllowed()).isFalse();
  }

  // ------------------------------------------------------------------ operations

  @Test
  public void tryAcquire_fractionalCosts_admitUpToCapacityExactly() {
    RateLimiter l = limiter(Limit.leakyBucket(1000, Rate.of(1000, Duration.ofDays(30))));
    assertThat(l.tryAcquire("budget", 30).isAllowed()).isTrue();
    Decision d = l.tryAcquire("budget", 990);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.remaining()).isCloseTo(970, within(EPS));
    assertThat(l.tryAcquire("budget", 969.75).isAllowed()).isTrue();
    assertThat(l.tryAcquire("budget", 0.5).isAllowed()).isFalse();
    assertThat(l.tryAcquire("budget", 0.25).isAllowed()).isTrue();
    assertThat(l.check("budget", 0.25).isAllowed()).isFalse();
  }

  @Test
  public void tryAcquire_costsThatSumToCapacity_allFit() {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(1.5)));
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k", 0.001).isAllowed()).isFalse();
  }

  /**
   * Seed 000's own bucket (capacity 3, 1.5/s) filled by three costs of 1 at
   * one instant holds exactly 3 and reports the "full" event; costs were once rounded down to
   * whole ticks (level 2.999999997 in memory, 2.999997 on microsecond stores, never full).
   */
  @Test
  public void seed000_threeFillUpsOfOne_reachCapacityExactly() {
    RateLimiter b = limiter(Limit.leakyBucket(3, Rate.perSecond(1.5)));
    assertThat(b.fillUp("k", 1).reachedCapacity()).isFalse();
    assertThat(b.fillUp("k", 1).reachedCapacity()).isFalse();
    Decision d = b.fillUp("k", 1);
    assertThat(d.reachedCapacity()).isTrue();
    assertThat(d.level()).isEqualTo(3.0);
    assertThat(d.remaining()).isZero();
    assertThat(d.resetAfterNanos()).isEqualTo(nanos(2.0));
    // tenths add up too: thirty of 0.1 fill it exactly, and the thirtieth is the full one
    RateLimiter t = limiter(Limit.leakyBucket(3, Rate.perSecond(1.5)));
    for (int i = 1; i < 30; i++) {
      assertThat(t.fillUp("k", 0.1).reachedCapacity()).as("fill-up %s", i).isFalse();
    }
    assertThat(t.fillUp("k", 0.1).reachedCapacity()).isTrue();
  }

  /**
   * A rate whose unit is not a whole number of ticks (300,000/s: 3 1/3 µs) admits exactly its
   * rate over time: no drift in the client's favour (it once admitted 333,333/s on Redis).
   */
  @Test
  public void rateWhoseUnitIsAFractionOfATick_admitsExactlyItsRate() {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(300_000)));
    int admitted = 0;
    for (int step = 0; step <= 1000; step++) {
      clock.set(step * 10_000L);   // every 10 µs, for 10 ms: 3,000 units leak
      while (l.tryAcquire("k").isAllowed()) {
        admitted++;
      }
    }
    assertThat(admitted).as("3 at start + 300,000/s for 10 ms").isEqualTo(3 + 3_000);
  }

  @Test
  public void check_changesNothing() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    for (int i = 0; i < 5; i++) {
      assertThat(l.check("k", 2).isAllowed()).isTrue();
    }
    assertThat(l.tryAcquire("k", 2).isAllowed()).isTrue();
    Decision d = l.check("k", 1);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(1));
    assertThat(l.check("k", 1).retryAfterNanos()).isEqualTo(nanos(1));
  }

  @Test
  public void tryAcquire_rejected_changesNothing() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    l.tryAcquire("k", 1.5);
    for (int i = 0; i < 3; i++) {
      assertThat(l.tryAcquire("k", 1).isAllowed()).isFalse();
    }
    assertThat(l.tryAcquire("k", 0.5).isAllowed()).isTrue();
  }

  @Test
  public void tryAcquire_costAboveCapacity_neverAdmits() {
    RateLimiter l = limiter(Limit.leakyBucket(5, Rate.perSecond(1)));
    Decision d = l.tryAcquire("k", 5.5);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.isNeverAdmissible()).isTrue();
    assertThat(d.retryAfterNanos()).isEqualTo(Long.MAX_VALUE);
    assertThat(d.retryAfter()).isEqualTo(ChronoUnit.FOREVER.getDuration());
    assertThat(l.tryAcquire("k", 5).isAllowed()).as("nothing was charged").isTrue();
  }

  @Test
  public void decision_figures_remainingRetryResetDelay() {
    RateLimiter l = limiter(Limit.leakyBucket(4, Rate.perSecond(2)));
    Decision d = l.tryAcquire("k", 3);
    assertThat(d.remaining()).isCloseTo(1, within(EPS));
    assertThat(d.retryAfterNanos()).isZero();
    assertThat(d.resetAfterNanos()).isEqualTo(nanos(1.5));
    assertThat(d.delayNanos()).isZero();
    d = l.tryAcquire("k", 2);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(0.5));
    assertThat(d.resetAfterNanos()).isEqualTo(nanos(1.5));
    assertThat(d.limit()).isEqualTo(l.limits().get(0));
  }

  @Test
  public void fillUp_clampsAtCapacity_andReportsTheInstant() {
    RateLimiter l = limiter(Limit.leakyBucket(3, Rate.perSecond(1)));
    Decision d = l.fillUp("k", 2);
    assertThat(d.reachedCapacity()).isFalse();
    assertThat(d.isAllowed()).isTrue();
    d = l.fillUp("k", 5);
    assertThat(d.reachedCapacity()).isTrue();
    assertThat(d.level()).isCloseTo(3, within(EPS));
    at(1.0);
    assertThat(l.check("k", 1).isAllowed()).as("clamped at 3, one unit leaked").isTrue();
    assertThat(l.check("k", 1.25).isAllowed()).isFalse();
  }

  @Test
  public void tokenBucket_gcra_leakyBucket_decideIdentically() {
    Random random = new Random(42);
    RateLimiter leaky = limiter(Limit.leakyBucket(5, Rate.perSecond(2)));
    RateLimiter token = limiter(Limit.tokenBucket(5, Rate.perSecond(2)));
    RateLimiter gcra = limiter(Limit.gcra(Rate.perSecond(2), 5));
    long t = 0;
    for (int i = 0; i < 2_000; i++) {
      t += random.nextInt(400_000) * 1000L;
      clock.set(t);
      double cost = 0.25 * (1 + random.nextInt(8));
      Decision a = leaky.tryAcquire("k", cost);
      Decision b = token.tryAcquire("k", cost);
      Decision c = gcra.tryAcquire("k", cost);
      assertThat(b.isAllowed()).isEqualTo(a.isAllowed());
      assertThat(c.isAllowed()).isEqualTo(a.isAllowed());
      assertThat(b.remaining()).isEqualTo(a.remaining());
      assertThat(c.retryAfterNanos()).isEqualTo(a.retryAfterNanos());
      assertThat(c.resetAfterNanos()).isEqualTo(b.resetAfterNanos());
    }
  }

  @Test
  public void reset_forgetsTheKey() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
    l.reset("k");
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    l.reset("never-seen");
  }

  /**
   * A limiter bound to a key ({@link RateLimiter#forKey}) decides as the keyed calls do: the same
   * random walk on key "a" through the limiter and on key "b" through the bound limiter gives the
   * same decisions, figures included, for a single bucket at a rate of no whole ticks, a window
   * and two buckets; and the bound key's state is the limiter's (a keyed check sees what the bound
   * limiter charged, a reset either way forgets it).
   */
  @Test
  public void keyLimiter_decidesAsTheKeyedCalls_onTheSameState() {
    List<List<Limit>> configurations = List.of(List.of(Limit.leakyBucket(5, Rate.perSecond(3))),
        List.of(Limit.fixedWindow(4, Duration.ofSeconds(1))),
        List.of(Limit.leakyBucket(2, Rate.perSecond(7)), Limit.leakyBucket(6, Rate.perSecond(1))));
    for (int c = 0; c < configurations.size(); c++) {
      List<Limit> limits = configurations.get(c);
      String a = "keyed-" + c;   // keys of their own: a shared store keeps earlier tests' keys
      String key = "bound-" + c;
      RateLimiter l = factory().create(clock, limits);
      KeyLimiter b = l.forKey(key);
      assertThat(b.key()).isEqualTo(key);
      assertThat(b.limiter()).isSameAs(l);
      boolean queue = limits.get(0).algorithm() != Algorithm.FIXED_WINDOW;
      Random random = new Random(11);
      for (int step = 0; step < 300; step++) {
        clock.advanceNanos(random.nextInt(3) == 0 ? 0 : random.nextInt(400_000) * 1000L);
        double cost = (1 + random.nextInt(250)) / 100.0;
        int op = random.nextInt(queue ? 5 : 4);
        Decision keyed = switch (op) {
          case 0 -> l.tryAcquire(a, cost);
          case 1 -> l.tryAcquire(a);
          case 2 -> l.check(a, cost);
          case 3 -> random.nextInt(20) == 0 ? reset(l, a) : l.check(a);
          default -> l.reserve(a, cost);
        };
        Decision bound = switch (op) {
          case 0 -> b.tryAcquire(cost);
          case 1 -> b.tryAcquire();
          case 2 -> b.check(cost);
          case 3 -> keyed == null ? resetBound(b) : b.check();
          default -> b.reserve(cost);
        };
        if (keyed != null) {
          assertThat(figures(bound)).as("%s step %d op %d", limits, step, op)
              .isEqualTo(figures(keyed));
        }
      }
      l.reset(key);   // the clock stands still from here: nothing leaks between the calls
      assertThat(b.tryAcquire(1.5).isAllowed()).isTrue();
      assertThat(figures(b.check(0.5))).isEqualTo(figures(l.check(key, 0.5)));
      assertThat(l.check(key, 0.5).remaining()).as("the keyed call sees the bound charge")
          .isCloseTo(limits.get(0).capacity() - 1.5, within(EPS));
      l.reset(key);
      assertThat(b.check(0.5).remaining()).as("a keyed reset is seen by the bound limiter")
          .isCloseTo(limits.get(0).capacity(), within(EPS));
      assertThat(l.tryAcquire(key, 2).isAllowed()).isTrue();
      b.reset();
      assertThat(l.check(key, 0.5).remaining()).as("a bound reset is seen by the keyed calls")
          .isCloseTo(limits.get(0).capacity(), within(EPS));
    }
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    assertThatThrownBy(() -> l.forKey(null)).isInstanceOf(NullPointerException.class).hasMessageContaining("key");
    assertThatThrownBy(() -> l.forKey("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    KeyLimiter k = l.forKey("k");
    for (double bad : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThatThrownBy(() -> k.tryAcquire(bad)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cost").hasMessageContaining(String.valueOf(bad).replace(".0", ""));
      assertThatThrownBy(() -> k.check(bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> k.reserve(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(k.check(2).isAllowed()).as("bad calls charged nothing").isTrue();
  }

  /** Every public figure of a decision, each limit's own included. */
  private static List<Object> figures(Decision d) {
    List<Object> all = new ArrayList<>(List.of(d.isAllowed(), d.reachedCapacity(), d.remaining(),
        d.retryAfterNanos(), d.resetAfterNanos(), d.delayNanos(), d.limit(), d.isDegraded(),
        d.isUnavailable(), d.isLeased(), d.isBorrowed()));
    if (d.perLimit().size() > 1) {
      for (Decision each : d.perLimit()) {
        all.add(figures(each));
      }
    }
    return all;
  }

  private static Decision reset(RateLimiter l, String key) {
    l.reset(key);
    return null;
  }

  private static Decision resetBound(KeyLimiter b) {
    b.reset();
    return null;
  }

  @Test
  public void keys_areIndependent() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perHour(1)));
    assertThat(l.tryAcquire("a").isAllowed()).isTrue();
    assertThat(l.tryAcquire("b").isAllowed()).isTrue();
    assertThat(l.tryAcquire("a").isAllowed()).isFalse();
  }

  @Test
  public void clockGoingBackwards_countsAsNoTime() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    at(10);
    l.tryAcquire("k", 2);
    at(5);   // the clock jumps back 5 s
    Decision d = l.check("k", 1);
    assertThat(d.retryAfterNanos()).as("no extra wait, no extra room").isEqualTo(nanos(1));
    at(11);
    assertThat(l.tryAcquire("k", 1).isAllowed()).isTrue();
    assertThat(l.tryAcquire("k", 0.5).isAllowed()).isFalse();
  }

  // ------------------------------------------------------------------ several limits

  @Test
  public void severalLimits_allMustAdmit_noneChargedOtherwise() {
    Limit perSecond = Limit.leakyBucket(10, Rate.perSecond(10)).named("10/s");
    Limit perHour = Limit.leakyBucket(15, Rate.perHour(15)).named("15/h");
    RateLimiter l = limiter(perSecond, perHour);
    for (int i = 0; i < 10; i++) {
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    }
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.limit().name()).isEqualTo("10/s");
    assertThat(d.perLimit()).hasSize(2);
    assertThat(d.perLimit().get(1).isAllowed()).as("the hourly limit alone had room").isTrue();
    at(1.0);
    for (int i = 0; i < 5; i++) {
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    }
    d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.limit().name()).isEqualTo("15/h");
    // one unit of 15/h leaks in 240 s, and 1 s of it has leaked already
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(239));
    // the per-second bucket was not charged by the rejected request: 5 of its 10 left... leaked
    assertThat(d.perLimit().get(0).remaining()).isCloseTo(5, within(EPS));
  }

  @Test
  public void dualLeakyBucket_peakAndSustained() {
    // ATM TM 4.0: peak 10/s with no burst, sustained 2/s with a burst of 5
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(10)).named("peak"),
        Limit.leakyBucket(5, Rate.perSecond(2)).named("sustained"));
    int admitted = 0;
    for (int i = 0; i < 100; i++) {
      clock.set(i * 100_000_000L);   // one request per 100 ms for 10 s
      if (l.tryAcquire("vc").isAllowed()) {
        admitted++;
      }
    }
    // 6 in the burst (0 to 0.5 s), then one per 0.5 s from 1.0 s to 9.5 s: 6 + 18 = 24
    assertThat(admitted).isEqualTo(24);
  }

  @Test
  public void severalLimits_reserve_departsWhenEveryQueueIsEmpty() {
    // each request sits in both queues until it departs: 6 @ 2/s holds 3 s, 3 @ 1/s holds 3 s
    RateLimiter l = limiter(Limit.leakyBucket(6, Rate.perSecond(2)), Limit.leakyBucket(3, Rate.perSecond(1)));
    assertThat(l.reserve("k").delayNanos()).isZero();
    assertThat(l.reserve("k").delayNanos()).isEqualTo(nanos(1));   // the 1/s queue is the slower
    assertThat(l.reserve("k").delayNanos()).isEqualTo(nanos(2));
    assertThat(l.reserve("k").isAllowed()).isFalse();
  }

  @Test
  public void reserve_onWindowLimit_isRefusedWithAReason() {
    RateLimiter l = limiter(Limit.fixedWindow(10, Duration.ofSeconds(1)));
    assertThatThrownBy(() -> l.reserve("k"))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("fixed-window");
  }

  // ------------------------------------------------------------------ windows

  @Test
  public void fixedWindow_startsWithFirstRequest_resetsAtItsEnd() {
    RateLimiter l = limiter(Limit.fixedWindow(3, Duration.ofSeconds(10)));
    at(5);
    for (int i = 0; i < 3; i++) {
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    }
    at(14.9);
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(0.1));
    at(15);
    assertThat(l.tryAcquire("k").isAllowed()).as("burst at reset: seed 004's complaint").isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
  }

  @Test
  public void slidingWindow_weighsThePreviousWindow() {
    RateLimiter l = limiter(Limit.slidingWindow(10, Duration.ofSeconds(10)));
    at(5);
    for (int i = 0; i < 10; i++) {
      assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    }
    at(12.5);   // previous window had 10; 75% of it is still in view: 7.5
    Decision d = l.check("k", 2.5);
    assertThat(d.isAllowed()).isTrue();
    assertThat(d.remaining()).isCloseTo(2.5, within(EPS));
    assertThat(l.tryAcquire("k", 3).isAllowed()).isFalse();
    assertThat(l.tryAcquire("k", 2.5).isAllowed()).isTrue();
    d = l.tryAcquire("k", 1);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(1));   // at 13.5 s the weight is 6.5
  }

  // ------------------------------------------------------------------ penalty

  @Test
  public void penalty_afterOverflow_rejectsForThePenalty() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(30)));
    l.tryAcquire("k", 2);
    Decision d = l.tryAcquire("k", 1);
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(31));   // held full 30 s, then 1 s to leak 1
    at(10);
    assertThat(l.tryAcquire("k", 1).isAllowed()).as("held").isFalse();
    at(30.5);   // the hold ended at 30 s; the full bucket has leaked 0.5
    assertThat(l.check("k", 1).isAllowed()).isFalse();
    at(31);   // the rejection at 10 s did not extend the penalty
    assertThat(l.tryAcquire("k", 1).isAllowed()).isTrue();
  }

  @Test
  public void penalty_onWindow_blocksUntilItEnds() {
    RateLimiter l = limiter(Limit.fixedWindow(1, Duration.ofSeconds(1)).withPenalty(Duration.ofSeconds(5)));
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
    Decision d = l.tryAcquire("k");
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(5));
    at(4.999);
    assertThat(l.tryAcquire("k").isAllowed()).isFalse();
    at(5);
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
  }

  @Test
  public void penalty_costThatCanNeverFit_doesNotPenalize() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(30)));
    assertThat(l.tryAcquire("k", 3).isNeverAdmissible()).isTrue();
    assertThat(l.tryAcquire("k", 2).isAllowed()).isTrue();
  }

  // ------------------------------------------------------------------ validation

  @Test
  public void badKeysAndCosts_areRejectedWithTheValue() {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    assertThatThrownBy(() -> l.tryAcquire(null)).isInstanceOf(NullPointerException.class).hasMessageContaining("key");
    assertThatThrownBy(() -> l.tryAcquire("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    for (double bad : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
      assertThatThrownBy(() -> l.tryAcquire("k", bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cost").hasMessageContaining(String.valueOf(bad).replace(".0", ""));
      assertThatThrownBy(() -> l.check("k", bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> l.fillUp("k", bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> l.reserve("k", bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> l.acquire("k", bad, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> l.acquireAsync("k", bad, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> l.acquire("k", 1, Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
    assertThat(l.check("k", 2).isAllowed()).as("bad calls charged nothing").isTrue();
  }

  // ------------------------------------------------------------------ acquire

  @Test
  public void acquire_waitsExactlyTheRetryAfter() throws InterruptedException {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(4)));
    l.tryAcquire("job", 2);
    long before = clock.nanoTime();
    Decision d = l.acquire("job", 1, Duration.ofSeconds(1));
    assertThat(d.isAllowed()).isTrue();
    assertThat(clock.nanoTime() - before).isEqualTo(nanos(0.25));
  }

  @Test
  public void acquire_waitBeyondTimeout_failsAtOnce() throws InterruptedException {
    RateLimiter l = limiter(Limit.leakyBucket(2, Rate.perSecond(1)));
    l.tryAcquire("job", 2);
    long before = clock.nanoTime();
    Decision d = l.acquire("job", 1, Duration.ofMillis(999));
    assertThat(d.isAllowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(nanos(1));
    assertThat(clock.nanoTime()).as("did not wait").isEqualTo(before);
    assertThat(l.acquire("job", 5, Duration.ofDays(1)).isNeverAdmissible()).isTrue();
  }

  @Test
  public void acquire_interrupted_throwsAndChargesNothing() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(1)));
    l.tryAcquire("job");
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> l.acquire("job", 1, Duration.ofSeconds(5)))
        .isInstanceOf(InterruptedException.class);
    assertThat(Thread.interrupted()).isFalse();
    assertThat(l.check("job").retryAfterNanos()).isEqualTo(nanos(1));
  }

  /**
   * Waits (bounded) until the limiter has scheduled its retries: with an asynchronous store the
   * rejection arrives on the store's thread a moment after the call returns.
   */
  private void awaitScheduled(int tasks) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (clock.pendingTasks() < tasks && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(clock.pendingTasks()).as("scheduled retries").isEqualTo(tasks);
  }

  @Test
  public void acquireAsync_holdsNoThread_completesWhenAdmitted() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(2)));
    l.tryAcquire("job");
    CompletableFuture<Decision> f = l.acquireAsync("job", 1, Duration.ofSeconds(1));
    awaitScheduled(1);
    assertThat(f).isNotDone();
    clock.advanceNanos(nanos(0.5) - 1);
    assertThat(f).isNotDone();
    assertThat(clock.pendingTasks()).as("not yet due").isEqualTo(1);
    clock.advanceNanos(1);
    assertThat(f.get(10, TimeUnit.SECONDS).isAllowed()).isTrue();
  }

  @Test
  public void acquireAsync_waitBeyondTimeout_completesRejectedAtOnce() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(1)));
    l.tryAcquire("job");
    long before = clock.nanoTime();
    CompletableFuture<Decision> f = l.acquireAsync("job", 1, Duration.ofMillis(10));
    assertThat(f.get(10, TimeUnit.SECONDS).isAllowed()).isFalse();
    assertThat(clock.pendingTasks()).as("no retry was scheduled").isZero();
    assertThat(clock.nanoTime()).as("no time had to pass").isEqualTo(before);
  }

  @Test
  public void acquireAsync_cancelled_stopsWaitingAndChargesNothing() {
    RateLimiter l = limiter(Limit.leakyBucket(1, Rate.perSecond(1)));
    l.tryAcquire("job");
    CompletableFuture<Decision> f = l.acquireAsync("job", 1, Duration.ofSeconds(5));
    awaitScheduled(1);
    f.cancel(false);
    clock.advance(Duration.ofSeconds(1));
    assertThat(l.check("job").isAllowed()).as("the cancelled wait took nothing").isTrue();
  }

  // ------------------------------------------------------------------ extremes

  /**
   * Costs at the ends of the double range, on every algorithm (with a penalty where it can
   * start one) and every operation: ordinary decisions, never a failure inside the store.
   */
  @Test
  public void extremeCosts_everyAlgorithmAndOperation_areDecisions() {
    Limit[] limits = {
        Limit.leakyBucket(10, Rate.perSecond(1)),
        Limit.tokenBucket(10, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(5)),
        Limit.gcra(Rate.perSecond(1), 3),
        Limit.fixedWindow(10, Duration.ofSeconds(1)).withPenalty(Duration.ofDays(3650)),
        Limit.slidingWindow(10, Duration.ofSeconds(1)),
    };
    at(1.0);
    for (int i = 0; i < limits.length; i++) {
      Limit limit = limits[i];
      RateLimiter l = limiter(limit, Limit.leakyBucket(1e6, Rate.perSecond(1e6)));   // 1 µs a unit
      for (double cost : new double[] {1e300, Double.MAX_VALUE, 1e-300, Double.MIN_VALUE}) {
        String key = "extreme:" + i + ":" + cost;
        Decision d = l.tryAcquire(key, cost);
        String what = limit + ", cost " + cost;
        assertThat(d.isDegraded()).as(what).isFalse();
        assertThat(d.isAllowed()).as(what).isEqualTo(cost < 1);
        assertThat(d.isNeverAdmissible()).as(what).isEqualTo(cost > 1);
        assertThat(l.check(key, cost).isDegraded()).as(what).isFalse();
        assertThat(l.fillUp(key, cost).isDegraded()).as(what).isFalse();
        if (limit.algorithm().isBucket()) {
          assertThat(l.reserve(key, cost).isDegraded()).as(what).isFalse();
        }
        assertThat(l.tryAcquire(key, 1).isDegraded()).as(what).isFalse();
      }
      assertThat(l.stats().storeErrors()).as(limit.toString()).isZero();
    }
  }

  // ------------------------------------------------------------------ concurrency

  /** Threads in the stress tests; raise with -Dsluice.test.threads. */
  protected int threads() {
    return Integer.getInteger("sluice.test.threads", 8);
  }

  /** Operations per thread per phase; raise with -Dsluice.test.operations. */
  protected int operations() {
    return Integer.getInteger("sluice.test.operations", 20_000) / 4;
  }

  /**
   * Whether {@code d}'s outcome is unknown: a shared store's call failed (most often it ran past
   * the store's timeout on a busy host) and the request was refused unavailable; the store may
   * have charged it all the same, since no store replays a call that may have committed.
   */
  private static boolean unknownOutcome(Decision d) {
    if (!d.isDegraded()) {
      return false;
    }
    assertThat(d.isUnavailable()).as("a degraded decision of a limiter failing closed: %s", d)
        .isTrue();
    assertThat(d.isAllowed()).as("failing closed admits nothing: %s", d).isFalse();
    return true;
  }

  /**
   * The store's level as seen by a check that reached it: a check past the store's timeout
   * (degraded) is asked again, a few times at most.
   */
  private static Decision settled(RateLimiter l, String key, double cost) {
    Decision d = l.check(key, cost);
    for (int i = 0; i < 20 && d.isDegraded(); i++) {
      d = l.check(key, cost);
    }
    assertThat(d.isDegraded()).as("a check on %s reached the store", key).isFalse();
    return d;
  }

  /**
   * The store charged every admitted cost once ({@code charged} at least {@code admitted}), and
   * nothing else but what may have committed unheard ({@code unknown}): exactly the admitted sum
   * when no call's outcome was unknown.
   */
  private static void charged(String what, double charged, double admitted, double unknown) {
    assertThat(charged).as("%s: the store's level against the admitted sum %s (and %s refused"
        + " with an unknown outcome)", what, admitted, unknown)
        .isBetween(admitted - 1e-6, admitted + unknown + 1e-6);
  }

  /**
   * Many threads on one hot key, random costs, the clock fixed within a phase: the admitted total
   * never exceeds the room at the phase start, every rejected cost really did not fit at the end,
   * and the store's own level agrees with the sum to the tick.
   *
   * <p>On a busy host a shared store's call may run past its timeout: refused as unavailable
   * (failing closed), with an outcome nobody knows, since the store may have charged it all the
   * same (nothing is replayed). The store's level is then at least the admitted sum and at most
   * that plus the costs of those calls, and exactly the sum when there were none; see
   * {@link #charged}.
   */
  @Test
  public void concurrency_hotKey_exactAccounting() throws Exception {
    double capacity = 1000;
    RateLimiter l = limiter(Limit.leakyBucket(capacity, Rate.perSecond(500)));
    ExecutorService pool = Executors.newFixedThreadPool(threads());
    try {
      KeyLimiter bound = l.forKey("hot");   // odd threads call through it
      for (int phase = 0; phase < 4; phase++) {
        clock.advance(Duration.ofMillis(700L * phase));
        double room = settled(l, "hot", 0.25).remaining();
        List<Future<double[]>> results = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        for (int t = 0; t < threads(); t++) {
          long seed = phase * 1000L + t;
          results.add(pool.submit(() -> {
            Random r = new Random(seed);
            go.await();
            double admitted = 0;
            double unknown = 0;
            double smallestRejected = Double.MAX_VALUE;
            for (int i = 0; i < operations(); i++) {
              double cost = 0.25 * (1 + r.nextInt(12));
              Decision d = seed % 2 == 0 ? l.tryAcquire("hot", cost) : bound.tryAcquire(cost);
              if (d.isAllowed()) {
                admitted += cost;
              } else if (unknownOutcome(d)) {
                unknown += cost;
              } else {
                smallestRejected = Math.min(smallestRejected, cost);
              }
            }
            return new double[] {admitted, unknown, smallestRejected};
          }));
        }
        go.countDown();
        double admitted = 0;
        double unknown = 0;
        double smallestRejected = Double.MAX_VALUE;
        for (Future<double[]> f : results) {
          double[] r = f.get(60, TimeUnit.SECONDS);
          admitted += r[0];
          unknown += r[1];
          smallestRejected = Math.min(smallestRejected, r[2]);
        }
        assertThat(admitted).as("phase %s admitted", phase).isLessThanOrEqualTo(room + EPS);
        double left = settled(l, "hot", 0.25).remaining();
        charged("phase " + phase, room - left, admitted, unknown);
        assertThat(smallestRejected).as("each rejection really did not fit").isGreaterThan(left);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Many threads on many keys: per-key totals never exceed capacity; nothing is lost. */
  @Test
  public void concurrency_manyKeys_exactAccounting() throws Exception {
    int keys = 64;
    RateLimiter l = limiter(Limit.leakyBucket(50, Rate.perHour(1)));
    ExecutorService pool = Executors.newFixedThreadPool(threads());
    try {
      List<Future<double[]>> results = new ArrayList<>();
      for (int t = 0; t < threads(); t++) {
        long seed = t;
        results.add(pool.submit(() -> {
          Random r = new Random(seed);
          double[] admitted = new double[keys];
          double[] unknown = new double[keys];
          for (int i = 0; i < operations(); i++) {
            int k = r.nextInt(keys);
            double cost = 0.5 * (1 + r.nextInt(6));
            Decision d = l.tryAcquire("key-" + k, cost);
            if (d.isAllowed()) {
              admitted[k] += cost;
            } else if (unknownOutcome(d)) {
              unknown[k] += cost;
            }
          }
          double[] both = Arrays.copyOf(admitted, 2 * keys);
          System.arraycopy(unknown, 0, both, keys, keys);
          return both;
        }));
      }
      double[] total = new double[keys];
      double[] unknown = new double[keys];
      for (Future<double[]> f : results) {
        double[] a = f.get(60, TimeUnit.SECONDS);
        for (int k = 0; k < keys; k++) {
          total[k] += a[k];
          unknown[k] += a[keys + k];
        }
      }
      for (int k = 0; k < keys; k++) {
        assertThat(total[k]).isLessThanOrEqualTo(50);
        double level = 50 - settled(l, "key-" + k, 0.5).remaining();
        charged("key-" + k, level, total[k], unknown[k]);
        assertThat(level).as("key-%s filled up to within one largest cost", k)
            .isGreaterThan(50 - 3);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Several limits under contention: no limit is ever charged for a rejected request. */
  @Test
  public void concurrency_severalLimits_allOrNothing() throws Exception {
    RateLimiter l = limiter(Limit.leakyBucket(40, Rate.perHour(1)).named("a"),
        Limit.leakyBucket(100, Rate.perHour(1)).named("b"));
    ExecutorService pool = Executors.newFixedThreadPool(threads());
    AtomicBoolean failed = new AtomicBoolean();
    try {
      List<Future<double[]>> results = new ArrayList<>();
      for (int t = 0; t < threads(); t++) {
        long seed = t;
        results.add(pool.submit(() -> {
          Random r = new Random(seed);
          double admitted = 0;
          double unknown = 0;
          for (int i = 0; i < operations() / 4; i++) {
            double cost = 0.5 * (1 + r.nextInt(4));
            Decision d = l.tryAcquire("k", cost);
            if (d.isAllowed()) {
              admitted += cost;
            } else if (unknownOutcome(d)) {
              unknown += cost;
            }
          }
          return new double[] {admitted, unknown};
        }));
      }
      double admitted = 0;
      double unknown = 0;
      for (Future<double[]> f : results) {
        double[] r = f.get(60, TimeUnit.SECONDS);
        admitted += r[0];
        unknown += r[1];
      }
      Decision d = settled(l, "k", 0.5);
      double a = 40 - d.perLimit().get(0).remaining();
      charged("limit a", a, admitted, unknown);
      // one decision charges both or neither, whether its caller heard the answer or not
      assertThat(100 - d.perLimit().get(1).remaining()).as("b charged only with a")
          .isCloseTo(a, within(1e-6));
      assertThat(failed).isFalse();
    } finally {
      pool.shutdownNow();
    }
  }
}

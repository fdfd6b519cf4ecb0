package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.math.BigInteger;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Integer time, rounding of costs, and the lock-free path against the general engine. */
class EngineInternalsTest {

  @Test
  void ticksAdd_saturatesInsteadOfWrapping() {
    assertThat(Ticks.add(Long.MAX_VALUE - 1, 10)).isEqualTo(Long.MAX_VALUE);
    assertThat(Ticks.add(Long.MIN_VALUE + 1, -10)).isEqualTo(Long.MIN_VALUE);
    assertThat(Ticks.add(3, 4)).isEqualTo(7);
    assertThat(Ticks.positiveDifference(Long.MAX_VALUE, Long.MIN_VALUE)).isEqualTo(Long.MAX_VALUE);
    assertThat(Ticks.positiveDifference(1, 5)).isZero();
    assertThat(Ticks.toNanos(Ticks.MAX, 1_000_000)).isEqualTo(Long.MAX_VALUE);
    assertThat(Ticks.toNanos(7, 1_000_000)).isEqualTo(7_000);
  }

  @Test
  void fromUnits_roundsUpSoThatNothingFavoursTheClient_butTakesNearIntegersAsThem() {
    double perUnit = 1e9 / 1.5;   // 666,666,666.67 ns
    assertThat(Ticks.fromUnits(1, perUnit)).isEqualTo(666_666_667L);
    assertThat(Ticks.fromUnits(3, perUnit)).isEqualTo(2_000_000_000L);
    assertThat(Ticks.fromUnits(0.3, 1e9)).as("0.3 * 1e9 is a hair below 3e8 in doubles").isEqualTo(300_000_000L);
    assertThat(Ticks.fromUnits(1e-30, 1e9)).isEqualTo(1);
    assertThat(Ticks.fromUnits(1e300, 1e9)).isEqualTo(Ticks.MAX);
    assertThat(Ticks.capacityFromUnits(1, perUnit)).isEqualTo(666_666_666L);
    assertThat(Ticks.capacityFromUnits(0.7, 1e6)).isEqualTo(700_000L);
  }

  /** The shortcut for whole products gives what the rounding gives, on a million draws. */
  @Test
  void fromUnits_wholeProductShortcut_agreesWithTheRounding() {
    Random random = new Random(3);
    for (int i = 0; i < 1_000_000; i++) {
      double units = switch (i % 4) {
        case 0 -> 1 + random.nextInt(1_000_000);
        case 1 -> (1 + random.nextInt(100_000)) / 4.0;
        case 2 -> Math.scalb(random.nextDouble(), random.nextInt(160) - 80);
        default -> (1 + random.nextInt(1000)) / 10.0;
      };
      double perUnit = switch (i % 3) {
        case 0 -> 1e9;
        case 1 -> 1e6 * (1 + random.nextInt(7));
        default -> Math.scalb(1 + random.nextDouble(), random.nextInt(80) - 20);
      };
      double exact = units * perUnit;
      long rounded = exact >= Ticks.MAX ? Ticks.MAX : Math.max(1,
          Math.abs(exact - Math.rint(exact)) <= Math.max(1e-6, 4 * Math.ulp(exact))
              ? (long) Math.rint(exact) : (long) Math.ceil(exact));
      assertThat(Ticks.fromUnits(units, perUnit)).as("%s x %s", units, perUnit).isEqualTo(rounded);
    }
    assertThat(Ticks.fromUnits(Ticks.MAX, 1)).isEqualTo(Ticks.MAX);
    assertThat(Ticks.fromUnits(0x1p52, 1)).isEqualTo(1L << 52);
    assertThat(Ticks.fromUnits(Double.MIN_VALUE, 1)).isEqualTo(1);
  }

  @Test
  void rationals_readDoublesAsTheDecimalsOrFractionsTheyWereWrittenAs() {
    assertThat(CompiledLimit.Rationals.of(1.5)).containsExactly(BigInteger.valueOf(3), BigInteger.valueOf(2));
    assertThat(CompiledLimit.Rationals.of(0.1)).containsExactly(BigInteger.ONE, BigInteger.TEN);
    assertThat(CompiledLimit.Rationals.of(1 / 3.0)).containsExactly(BigInteger.ONE, BigInteger.valueOf(3));
    assertThat(CompiledLimit.Rationals.of(1234.5678))
        .containsExactly(BigInteger.valueOf(6_172_839), BigInteger.valueOf(5_000));
    assertThat(CompiledLimit.Rationals.of(1e9)).containsExactly(BigInteger.valueOf(1_000_000_000), BigInteger.ONE);
    assertThat(CompiledLimit.Rationals.of(2.5e-7)).containsExactly(BigInteger.ONE, BigInteger.valueOf(4_000_000));
  }

  /**
   * Issue 11, defect 10: a bucket counts in steps of 1/scale tick, the scale making one unit of
   * cost a whole number of steps, so every decimal cost adds up exactly.
   */
  @Test
  void bucket_countsInStepsThatMakeAUnitWhole() {
    CompiledLimit seed000 = Limit.leakyBucket(3, Rate.perSecond(1.5)).compile(1_000_000_000L);
    assertThat(seed000.scale).isEqualTo(3);                  // a unit is 666,666,666 2/3 ns
    assertThat(seed000.unitCost).isEqualTo(2_000_000_000L);  // steps of 1/3 ns
    assertThat(seed000.capacity).isEqualTo(6_000_000_000L);
    assertThat(seed000.quantum(0.1)).isEqualTo(200_000_000L);
    assertThat(seed000.slots).isEqualTo(2);
    CompiledLimit micro = Limit.leakyBucket(100, Rate.perSecond(300_000)).compile(1_000_000);
    assertThat(micro.scale).isEqualTo(3);                    // 3 1/3 µs a unit
    assertThat(micro.unitCost).isEqualTo(10);
    CompiledLimit whole = Limit.leakyBucket(10, Rate.perSecond(1000)).compile(1_000_000);
    assertThat(whole.scale).isEqualTo(1);
    assertThat(whole.slots).isEqualTo(1);
    assertThat(whole.unitCost).isEqualTo(1000);
    CompiledLimit penalized = Limit.leakyBucket(3, Rate.perSecond(1.5)).withPenalty(Duration.ofSeconds(2))
        .compile(1_000_000_000L);
    assertThat(penalized.penalty).isEqualTo(6_000_000_000L);

    // three fillUp(1) at one instant reach 3 exactly: full, and the state says 2 s to empty
    long[] s = Engine.initialState(new CompiledLimit[] {seed000});
    long[] next = new long[s.length];
    Decision d = null;
    for (int i = 0; i < 3; i++) {
      d = Engine.decide(new CompiledLimit[] {seed000}, s, 1_000, Engine.FILL_UP, 1, next);
      s = next.clone();
    }
    assertThat(d.reachedCapacity()).isTrue();
    assertThat(d.level()).isEqualTo(3.0);
    assertThat(s).containsExactly(1_000 + 2_000_000_000L, 0);
    d = Engine.decide(new CompiledLimit[] {seed000}, s, 1_000 + 1, Engine.CHECK, 1, next);
    assertThat(d.level()).as("one ns later, 1.5e-9 leaked").isEqualTo(3 - 1.5e-9, within(1e-15));
  }

  /** A manual clock that only moves when told, for core's own tests. */
  static final class TestClock implements Clock {
    final AtomicLong now = new AtomicLong();

    @Override
    public long nanoTime() {
      return now.get();
    }

    @Override
    public void sleep(long nanos) {
      now.addAndGet(nanos);
    }
  }

  @Test
  void lockFreePath_decidesExactlyAsTheGeneralEngine() {
    Random r = new Random(7);
    for (int round = 0; round < 200; round++) {
      Limit limit = randomBucket(r);
      TestClock c1 = new TestClock();
      TestClock c2 = new TestClock();
      RateLimiter fast = Sluice.builder().limit(limit).clock(c1).build();
      RateLimiter general = Sluice.builder().limit(limit).clock(c2).generalPathOnly().build();
      for (int i = 0; i < 200; i++) {
        long step = r.nextInt(4) == 0 ? 0 : (long) (r.nextDouble() * 2e9);
        c1.now.addAndGet(step);
        c2.now.addAndGet(step);
        double cost = r.nextInt(10) == 0 ? 1 : r.nextDouble() * 4;
        String key = "k" + r.nextInt(3);
        int op = r.nextInt(5);
        Decision a;
        Decision b;
        switch (op) {
          case 0: a = fast.tryAcquire(key, cost); b = general.tryAcquire(key, cost); break;
          case 1: a = fast.check(key, cost); b = general.check(key, cost); break;
          case 2: a = fast.fillUp(key, cost); b = general.fillUp(key, cost); break;
          case 3: a = fast.reserve(key, cost); b = general.reserve(key, cost); break;
          default: fast.reset(key); general.reset(key); continue;
        }
        assertThat(a.toString()).as("round %s step %s op %s %s", round, i, op, limit).isEqualTo(b.toString());
        assertThat(a.remaining()).isEqualTo(b.remaining());
        assertThat(a.retryAfterNanos()).isEqualTo(b.retryAfterNanos());
        assertThat(a.resetAfterNanos()).isEqualTo(b.resetAfterNanos());
        assertThat(a.delayNanos()).isEqualTo(b.delayNanos());
        assertThat(a.reachedCapacity()).isEqualTo(b.reachedCapacity());
      }
    }
  }

  private static Limit randomBucket(Random r) {
    double capacity = 0.5 + r.nextDouble() * 20;
    Rate rate = Rate.of(0.1 + r.nextDouble() * 50, Duration.ofMillis(1 + r.nextInt(5000)));
    Limit l;
    switch (r.nextInt(3)) {
      case 0: l = Limit.leakyBucket(capacity, rate); break;
      case 1: l = Limit.tokenBucket(capacity, rate); break;
      default: l = Limit.gcra(rate, capacity);
    }
    return r.nextBoolean() ? l : l.withPenalty(Duration.ofMillis(1 + r.nextInt(3000)));
  }

  @Test
  void monotonicGuard_timeGoingBackReadsAsNoTime() {
    TestClock c = new TestClock();
    Clock guarded = new AbstractRateLimiter.MonotonicClock(c);
    c.now.set(100);
    assertThat(guarded.nanoTime()).isEqualTo(100);
    c.now.set(40);
    assertThat(guarded.nanoTime()).isEqualTo(100);
    c.now.set(130);
    assertThat(guarded.nanoTime()).isEqualTo(130);
  }

  @Test
  void systemClock_sleep_isInterruptible() throws Exception {
    List<Throwable> thrown = new ArrayList<>();
    Thread t = new Thread(() -> {
      try {
        Clock.system().sleep(Duration.ofHours(1).toNanos());
      } catch (InterruptedException e) {
        synchronized (thrown) {
          thrown.add(e);
        }
      }
    });
    t.start();
    t.interrupt();
    t.join(10_000);
    assertThat(t.isAlive()).isFalse();
    assertThat(thrown).hasSize(1);
  }

  @Test
  void acquire_onSystemClock_interrupted_throws() throws Exception {
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(1, Rate.perHour(1))).build();
    l.tryAcquire("job");
    List<Throwable> thrown = new ArrayList<>();
    Thread t = new Thread(() -> {
      try {
        l.acquire("job", 1, Duration.ofHours(2));
      } catch (Throwable e) {
        synchronized (thrown) {
          thrown.add(e);
        }
      }
    });
    t.start();
    t.interrupt();
    t.join(10_000);
    assertThat(t.isAlive()).isFalse();
    assertThat(thrown).singleElement().isInstanceOf(InterruptedException.class);
  }
}

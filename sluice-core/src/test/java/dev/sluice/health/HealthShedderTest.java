package dev.sluice.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Clock;
import dev.sluice.concurrency.Priority;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/** The health shedder on a manual clock, with signals the test sets and random draws it picks. */
class HealthShedderTest {
  private final AtomicLong now = new AtomicLong(1_000_000_000_000L);
  private final Clock clock = now::get;
  private final AtomicReference<Double> cpu = new AtomicReference<>(0.0);
  private final AtomicReference<Double> draw = new AtomicReference<>(0.5);
  private final AtomicInteger reads = new AtomicInteger();
  private final HealthSignal cpuSignal = HealthSignal.of("cpu", () -> {
    reads.incrementAndGet();
    return cpu.get();
  });

  private HealthShedder shedder(boolean guard) {
    return HealthShedder.builder().signal(cpuSignal, 0.80, 0.90).clock(clock)
        .random(draw::get).guard(guard).hysteresis(0.1).build();
  }

  private void advance(long millis) {
    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
  }

  /** Sets the signal and lets the next call read it. */
  private void set(double value) {
    cpu.set(value);
    advance(100);
  }

  @Test
  void belowItsStart_everythingIsAdmitted() {
    HealthShedder s = shedder(false);
    set(0.79);
    for (Priority p : Priority.values()) {
      HealthShedder.Verdict v = s.admit(p);
      assertThat(v.admitted()).as(p.name()).isTrue();
      assertThat(v.reason()).isEqualTo("admitted");
      v.end();
    }
    assertThat(s.pressure()).isZero();
    assertThat(s.inFlight()).isZero();
  }

  @Test
  void asPressureRises_sheddableGoesFirst_normalNext_criticalNever() {
    HealthShedder s = shedder(false);
    set(0.85);   // a pressure of (0.85 - 0.79) / (0.90 - 0.79): 0.545 with the hysteresis edge
    double pressure = (0.85 - 0.79) / (0.90 - 0.79);
    assertThat(s.admit(Priority.CRITICAL).admitted()).isTrue();
    assertThat(s.pressure()).isCloseTo(pressure, Offset.offset(1e-9));
    HealthShedder.Verdict sheddable = s.admit(Priority.SHEDDABLE);
    assertThat(sheddable.admitted()).as("all sheddable work above a pressure of 0.5").isFalse();
    assertThat(sheddable.shedProbability()).isEqualTo(1.0);
    HealthShedder.Verdict normal = s.admit(Priority.NORMAL);
    double p = pressure * 2 - 1;   // 0.09
    assertThat(normal.shedProbability()).isCloseTo(p, Offset.offset(1e-9));
    draw.set(p - 0.001);
    assertThat(s.admit(Priority.NORMAL).admitted()).as("a draw below the share: refused")
        .isFalse();
    draw.set(p + 0.001);
    assertThat(s.admit(Priority.NORMAL).admitted()).as("a draw above it: admitted").isTrue();
    set(0.95);   // past full
    assertThat(s.admit(Priority.NORMAL).admitted()).isFalse();
    assertThat(s.admit(Priority.CRITICAL).admitted()).as("critical is never shed by default")
        .isTrue();
    HealthShedder critical = HealthShedder.builder().signal(HealthSignal.of("cpu", cpu::get),
        0.80, 0.90).clock(clock).random(draw::get).guard(false).shedCritical(true).build();
    assertThat(critical.admit(Priority.CRITICAL).admitted()).as("unless asked, at full pressure")
        .isFalse();
  }

  @Test
  void theRampIsAProbability_sheddableHalfShedAtAQuarterOfTheBand() {
    HealthShedder s = HealthShedder.builder().signal(cpuSignal, 0.80, 0.90).clock(clock)
        .random(draw::get).guard(false).hysteresis(0).build();
    set(0.825);   // pressure 0.25: half the sheddable work, no normal work
    int refused = 0;
    for (int i = 0; i < 100; i++) {
      draw.set(i / 100.0);
      if (!s.admit(Priority.SHEDDABLE).admitted()) {
        refused++;
      }
      assertThat(s.admit(Priority.NORMAL).admitted()).isTrue();
    }
    assertThat(refused).isEqualTo(50);
  }

  @Test
  void aRefusal_namesItsSignal_itsValue_andTheBand() {
    HealthShedder s = shedder(false);
    set(0.97);
    HealthShedder.Verdict v = s.admit(Priority.NORMAL);
    assertThat(v.admitted()).isFalse();
    assertThat(v.signal()).isEqualTo("cpu");
    assertThat(v.value()).isEqualTo(0.97);
    assertThat(v.reason()).isEqualTo("shed: cpu at 0.97 (sheds NORMAL from 0.80, all but"
        + " critical at 0.90; pressure 1.00)");
    assertThat(s.refused()).isEqualTo(1);
    assertThat(s.refused(Priority.NORMAL)).isEqualTo(1);
    assertThat(s.refused(Priority.SHEDDABLE)).isZero();
    v.end();   // a refusal holds nothing
    assertThat(s.inFlight()).isZero();
  }

  @Test
  void hysteresis_aShedderPastItsStart_stopsOnlyBelowTheLowerEdge() {
    HealthShedder s = shedder(false);   // band 0.80 to 0.90, hysteresis 10%: released below 0.79
    draw.set(0.0);                      // any share above 0 refuses
    set(0.795);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("not yet started").isTrue();
    set(0.80);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("started").isFalse();
    set(0.795);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("below start, above the edge")
        .isFalse();
    assertThat(s.signals().get(0).shedding()).isTrue();
    set(0.789);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("below the edge: stopped").isTrue();
    set(0.795);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("rising again: from start").isTrue();
  }

  @Test
  void signalsAreReadAtMostOncePerInterval_byOneCaller() {
    HealthShedder s = HealthShedder.builder().signal(cpuSignal, 0.80, 0.90).clock(clock)
        .random(draw::get).guard(false).sampleEvery(Duration.ofMillis(50)).build();
    s.admit(Priority.NORMAL).end();
    int first = reads.get();
    assertThat(first).isEqualTo(1);
    cpu.set(0.99);
    advance(49);
    assertThat(s.admit(Priority.NORMAL).admitted()).as("the last reading still holds").isTrue();
    assertThat(reads.get()).isEqualTo(1);
    advance(1);
    assertThat(s.admit(Priority.NORMAL).admitted()).as("read again").isFalse();
    assertThat(reads.get()).isEqualTo(2);
  }

  @Test
  void aSignalThatFailsOrIsNotANumber_readsHealthy() {
    HealthShedder s = HealthShedder.builder()
        .signal(HealthSignal.of("broken", () -> {
          throw new IllegalStateException("no bean");
        }), 0.5, 0.9)
        .signal(HealthSignal.of("unknown", () -> Double.NaN), 0.5, 0.9)
        .clock(clock).random(draw::get).guard(false).build();
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).isTrue();
    assertThat(s.signals()).extracting(HealthShedder.SignalValue::name)
        .containsExactly("broken", "unknown");
    assertThat(s.signals().get(0).value()).isNaN();
  }

  @Test
  void theWorstSignalDecides() {
    AtomicReference<Double> pool = new AtomicReference<>(0.0);
    HealthShedder s = HealthShedder.builder().signal(cpuSignal, 0.80, 0.90)
        .signal(HealthSignal.of("pool", pool::get), 0.5, 1.0).clock(clock).random(draw::get)
        .guard(false).build();
    cpu.set(0.81);
    pool.set(0.99);
    advance(100);
    HealthShedder.Verdict v = s.admit(Priority.NORMAL);
    assertThat(v.admitted()).isFalse();
    assertThat(v.signal()).isEqualTo("pool");
  }

  @Test
  void theGuard_shedsNothingWhileInFlightWorkIsWhatTheBackendServesWell() {
    HealthShedder s = shedder(true);
    // good service, one call at a time: 99 calls of 10 ms end in the best whole second, which
    // explains ceil(99 x 0.010) + 1 = 2 calls in flight
    for (int i = 0; i < 100; i++) {
      HealthShedder.Verdict v = s.admit(Priority.SHEDDABLE);
      assertThat(v.admitted()).isTrue();
      advance(10);
      v.end();
    }
    advance(1000);   // that second is whole
    set(0.99);       // a neighbour takes the CPU
    List<HealthShedder.Verdict> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      HealthShedder.Verdict v = s.admit(Priority.SHEDDABLE);
      assertThat(v.admitted()).as("call %s: in flight %s, within what the backend serves", i,
          s.inFlight()).isTrue();
      held.add(v);
    }
    HealthShedder.Verdict fourth = s.admit(Priority.SHEDDABLE);
    assertThat(fourth.admitted()).as("past what its best second explains: shed").isFalse();
    held.forEach(HealthShedder.Verdict::end);
    held.get(0).end();   // once per verdict
    assertThat(s.inFlight()).isZero();
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).as("room again").isTrue();
  }

  @Test
  void withoutCompletions_theGuardLetsTheSignalsDecide() {
    HealthShedder s = shedder(true);
    set(0.99);
    assertThat(s.admit(Priority.SHEDDABLE).admitted()).isFalse();
  }

  @Test
  void manyThreads_inFlightIsExact() throws Exception {
    HealthShedder s = shedder(true);
    set(0.5);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Integer>> done = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      done.add(pool.submit(() -> {
        go.await();
        int admitted = 0;
        for (int i = 0; i < 10_000; i++) {
          HealthShedder.Verdict v = s.admit(Priority.values()[i % 3]);
          if (v.admitted()) {
            admitted++;
            v.end();
            v.end();
          }
        }
        return admitted;
      }));
    }
    go.countDown();
    int admitted = 0;
    for (Future<Integer> f : done) {
      admitted += f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(admitted).isEqualTo(80_000);
    assertThat(s.inFlight()).isZero();
  }

  @Test
  void badSettings_areNamed() {
    HealthShedder.Builder b = HealthShedder.builder();
    assertThatThrownBy(() -> b.signal(cpuSignal, 0.9, 0.8))
        .hasMessage("signal cpu needs start < full, both finite, but was start 0.9, full 0.8");
    assertThatThrownBy(() -> b.signal(cpuSignal, Double.NaN, 0.8))
        .hasMessageContaining("start NaN");
    b.signal(cpuSignal, 0.8, 0.9);
    assertThatThrownBy(() -> b.signal(HealthSignal.of("cpu", () -> 0), 0.5, 0.6))
        .hasMessage("signal cpu is already in this shedder");
    assertThatThrownBy(() -> HealthSignal.of(" ", () -> 0))
        .hasMessage("a health signal's name must not be blank but was ' '");
    assertThatThrownBy(() -> b.hysteresis(1)).hasMessageContaining("but was 1.0");
    assertThatThrownBy(() -> b.sampleEvery(Duration.ZERO)).hasMessageContaining("PT0S");
    assertThatThrownBy(() -> HealthShedder.builder().build())
        .hasMessage("a HealthShedder needs at least one signal");
  }
}

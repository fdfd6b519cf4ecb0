package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sluice.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The gradient limit where its estimates used to be poisoned, on synthetic windows and a virtual
 * clock: a stall of the host, calls made late by their own wait in the queue, and a cut measured
 * by permits taken before it. Each test fails on the rule it names removed.
 */
class GradientLimitStallsTest {
  private static final long MS = 1_000_000L;
  private long now;

  /**
   * One window of 100 permits ending 1 ms apart (the last 2 ms after the one before, so that it,
   * and only it, closes the window): {@code stalled} of them held {@code stallMs}
   * longer (a pause of the host lengthens the calls in flight through it), each {@code outcome},
   * each having waited {@code waitedMs} in the queue.
   */
  private void window(GradientLimit g, double rttMs, int inFlight, int stalled, double stallMs,
      Outcome outcome, double waitedMs) {
    for (int i = 0; i < 100; i++) {
      now += i == 99 ? 2 * MS : MS;
      double held = rttMs + (i < stalled ? stallMs : 0);
      g.onEnd(new PermitEnd("k", 1, (long) (held * MS), outcome, inFlight,
          (long) (waitedMs * MS), 0), now);
    }
  }

  private void steady(GradientLimit g, double rttMs, int windows) {
    for (int i = 0; i < windows; i++) {
      window(g, rttMs, g.limit(), 0, 0, Outcome.SUCCESS, 0);
    }
  }

  /** A backend of 10 workers serving in 50 ms: the latency at the limit in flight. */
  private static double queued(int inFlight) {
    return 50 * Math.max(1, inFlight / 10.0);
  }

  @Test
  void aStallOfTheHost_movesNeitherTheBaselineNorTheLimit() {
    GradientLimit g = GradientLimit.builder().initial(5).build();
    for (int i = 0; i < 40; i++) {
      window(g, queued(g.limit()), g.limit(), 0, 0, Outcome.SUCCESS, 0);
    }
    int limit = g.limit();
    double baseline = g.baselineNanos();
    for (int i = 0; i < 40; i++) {
      // in every window a 250-ms pause lengthens the 20 calls in flight through it
      window(g, queued(g.limit()), g.limit(), 20, 250, Outcome.SUCCESS, 0);
    }
    assertThat(g.baselineNanos()).as("the no-load latency")
        .isCloseTo(baseline, within(baseline / 100));
    assertThat(g.limit()).as("the limit, against %d without stalls", limit)
        .isBetween((int) (limit / 1.25), (int) Math.ceil(limit * 1.25));
  }

  /**
   * In flight falls and the latency holds while the backend serves as many calls a second as
   * before: a queue draining (its samples were taken when it was long), not a slower backend.
   */
  @Test
  void aQueueDrainingAsTheLimitFalls_doesNotLiftTheBaseline() {
    GradientLimit g = GradientLimit.builder().initial(20).max(40).build();
    steady(g, 20, 20);
    double baseline = g.baselineNanos();
    for (int inFlight : new int[] {40, 32, 25, 20, 16}) {
      window(g, 60, inFlight, 0, 0, Outcome.SUCCESS, 0);   // 100 calls in ~100 ms each time
    }
    assertThat(g.baselineNanos()).as("the no-load latency")
        .isCloseTo(baseline, within(baseline / 100));
  }

  /**
   * A request that arrived while the host was paused reaches the limiter when the pause ends,
   * its deadline spent: the pause within a hold time before the grant is the permit's own, so a
   * late answer it gets teaches the adaptive limits nothing (with the default 200-ms deadlines and
   * 250-ms stalls such drops drove the gradient from 12 permits to 3-4).
   */
  @Test
  void aPauseJustBeforeTheGrant_countsAsThePermitsOwn() {
    long[] clockNow = {1_000_000_000L};
    long pauseFrom = clockNow[0];
    long pauseTo = pauseFrom + 250 * MS;
    Clock clock = new Clock() {
      @Override
      public long nanoTime() {
        return clockNow[0];
      }

      @Override
      public long pausedNanos(long from, long to) {
        return Math.max(0, Math.min(to, pauseTo) - Math.max(from, pauseFrom));
      }
    };
    List<PermitEnd> ends = new ArrayList<>();
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(10).clock(clock)
        .onPermitEnd(ends::add).build();
    clockNow[0] = pauseTo;            // it arrived in the pause: the limiter sees it now
    Acquisition a = l.tryAcquire("k");
    clockNow[0] += 100 * MS;          // served in 100 ms, too late for its caller
    a.permit().release(Outcome.DROPPED);
    assertThat(ends.get(0).pausedNanos()).as("the pause's last 100 ms, a hold time before")
        .isEqualTo(100 * MS);
    assertThat(ends.get(0).heldThroughAPause()).isTrue();
    clockNow[0] += 1000 * MS;         // long after the pause
    Acquisition b = l.tryAcquire("k");
    clockNow[0] += 100 * MS;
    b.permit().release(Outcome.DROPPED);
    assertThat(ends.get(1).pausedNanos()).isZero();
    assertThat(ends.get(1).heldThroughAPause()).as("a drop of its own").isFalse();
    l.close();
  }

  /**
   * Permits held through a pause of this process that the clock saw (a stall of the whole host:
   * every call in flight through it times out at its client and is reported dropped) teach the
   * limit nothing: neither the drops nor the latency.
   */
  @Test
  void permitsHeldThroughAPauseOfThisProcess_teachNothing() {
    GradientLimit g = GradientLimit.builder().initial(20).max(40).build();
    steady(g, 20, 20);
    int limit = g.limit();
    double baseline = g.baselineNanos();
    for (int w = 0; w < 10; w++) {
      for (int i = 0; i < 100; i++) {
        now += MS;
        // 10 of each 100 were in flight through a 250-ms pause, and their clients gave up
        boolean paused = i < 10;
        g.onEnd(new PermitEnd("k", 1, (paused ? 270 : 20) * MS,
            paused ? Outcome.DROPPED : Outcome.SUCCESS, g.limit(), 0, paused ? 250 * MS : 0),
            now);
      }
      now += MS;
    }
    assertThat(g.limit()).as("ten drops in each window, all through the pause")
        .isGreaterThanOrEqualTo(limit);
    assertThat(g.baselineNanos()).isCloseTo(baseline, within(baseline / 100));
    assertThat(new PermitEnd("k", 1, 1000 * MS, Outcome.DROPPED, 1, 0, 200 * MS)
        .heldThroughAPause()).as("a pause under a quarter of a long hold").isFalse();
  }

  @Test
  void callsLateBecauseOfTheirWait_areLatencySamples_notDrops() {
    GradientLimit g = GradientLimit.builder().initial(20).max(40).build();
    steady(g, 20, 20);
    int limit = g.limit();
    for (int i = 0; i < 10; i++) {
      // the backend answered each in 20 ms, after a wait of 190 ms: late for a 200-ms deadline
      window(g, 20, g.limit(), 0, 0, Outcome.DROPPED, 190);
    }
    assertThat(g.limit()).as("waits do not drive the limit down").isGreaterThanOrEqualTo(limit);
  }

  @Test
  void dropsOfCallsThatDidNotWait_orFailedFast_stillBackOff() {
    GradientLimit g = GradientLimit.builder().initial(20).max(40).build();
    steady(g, 20, 20);
    int limit = g.limit();
    window(g, 20, g.limit(), 0, 0, Outcome.DROPPED, 0);
    assertThat(g.limit()).as("no wait: a drop").isLessThan(limit);
    steady(g, 20, 3);
    limit = g.limit();
    window(g, 2, g.limit(), 0, 0, Outcome.DROPPED, 50);
    assertThat(g.limit()).as("a 2-ms failure after a wait: failed fast, a drop")
        .isLessThan(limit);
  }

  @Test
  void afterACut_theWindowOfPermitsTakenBeforeIt_doesNotCutAgain() {
    GradientLimit g = GradientLimit.builder().initial(20).max(100).build();
    steady(g, 20, 20);
    int before = g.limit();
    window(g, 40, g.limit(), 0, 0, Outcome.SUCCESS, 0);   // a queue: the limit comes down
    int cut = g.limit();
    assertThat(cut).isLessThan(before);
    // the next window's permits were all taken before the cut (held 500 ms, ended within 101)
    window(g, 500, cut, 0, 0, Outcome.SUCCESS, 0);
    assertThat(g.limit()).as("measured the queue the cut drains: held").isEqualTo(cut);
    window(g, 40, g.limit(), 0, 0, Outcome.SUCCESS, 0);
    assertThat(g.limit()).as("taken under the cut limit: a queue still, cut again")
        .isLessThan(cut);
  }
}

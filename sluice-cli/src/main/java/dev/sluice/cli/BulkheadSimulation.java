package dev.sluice.cli;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Permit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;

/**
 * Sizes a bulkhead by Little's law (in flight = arrival rate × latency; seed 002: "a correctly-
 * sized bulkhead is concurrency = rate × p99 latency") and runs Poisson traffic through Sluice's
 * own in-memory concurrency limiter on a virtual clock: first with the latencies given, then
 * with every latency multiplied by the slowdown (a backend that got slower), side by side with
 * what would be in flight with no limit at all.
 */
final class BulkheadSimulation {
  private BulkheadSimulation() {}

  /** z of the 99th percentile of the standard normal distribution. */
  static final double Z99 = 2.3263478740408408;

  /**
   * The run's settings.
   *
   * @param rate arrivals per second
   * @param p50 median latency, seconds
   * @param p99 99th percentile latency, seconds
   * @param limit the permits (0: Little's law, rate × p99, rounded up)
   * @param seconds each phase's length
   * @param slowdown how much slower the second phase's latencies are (1: no second phase)
   * @param seed the random seed
   */
  record Settings(double rate, double p50, double p99, int limit, double seconds,
      double slowdown, long seed) {
    /** The limit Little's law gives (at least 1), or the one asked for. */
    int permits() {
      return limit > 0 ? limit : Math.max(1, (int) Math.ceil(rate * p99 - 1e-9));
    }

    /** The mean of the log-normal latency with this median and 99th percentile. */
    double meanLatency() {
      return p50 * Math.exp(sigma() * sigma() / 2);
    }

    double sigma() {
      return Math.log(p99 / p50) / Z99;
    }
  }

  /** One phase's figures. */
  record Phase(String name, double latencyFactor, long offered, long admitted, long refused,
      double meanInFlight, int maxInFlight, double unlimitedMeanInFlight,
      int unlimitedMaxInFlight) {
    double admittedPerSecond(double seconds) {
      return admitted / seconds;
    }
  }

  static List<Phase> run(Settings s) {
    List<Phase> phases = new ArrayList<>();
    Random random = new Random(s.seed());
    phases.add(phase("healthy", 1, s, random));
    if (s.slowdown() > 1) {
      phases.add(phase("slow x" + Report.num(s.slowdown()), s.slowdown(), s, random));
    }
    return phases;
  }

  private static final class VirtualClock implements Clock {
    long now;

    @Override
    public long nanoTime() {
      return now;
    }
  }

  /** Runs one phase: each arrival takes a permit or is refused; a permit ends after its latency. */
  private static Phase phase(String name, double factor, Settings s, Random random) {
    VirtualClock clock = new VirtualClock();
    Scheduler none = (task, delayNanos) -> { };   // leases never end here: nothing to sweep
    ConcurrencyLimiter limiter = ConcurrencyLimiter.builder().limit(s.permits())
        .lease(Duration.ofDays(1)).maxWaiters(0).clock(clock).scheduler(none).build();
    PriorityQueue<Object[]> ends = new PriorityQueue<>((a, b) -> Long.compare((long) a[0],
        (long) b[0]));
    PriorityQueue<Long> unlimitedEnds = new PriorityQueue<>();
    long end = (long) (s.seconds() * 1e9);
    long t = 0;
    long offered = 0;
    long admitted = 0;
    double inFlightArea = 0;
    double unlimitedArea = 0;
    int inFlight = 0;
    int most = 0;
    int unlimitedMost = 0;
    long last = 0;
    double mu = Math.log(s.p50() * factor);
    double sigma = s.sigma();
    while (true) {
      t += (long) (-Math.log(1 - random.nextDouble()) / s.rate() * 1e9);
      if (t >= end) {
        break;
      }
      // the permits and calls that ended before this arrival, in time order
      while ((!ends.isEmpty() && (long) ends.peek()[0] <= t)
          || (!unlimitedEnds.isEmpty() && unlimitedEnds.peek() <= t)) {
        long next = Math.min(ends.isEmpty() ? Long.MAX_VALUE : (long) ends.peek()[0],
            unlimitedEnds.isEmpty() ? Long.MAX_VALUE : unlimitedEnds.peek());
        inFlightArea += (double) inFlight * (next - last);
        unlimitedArea += (double) unlimitedEnds.size() * (next - last);
        last = next;
        clock.now = next;
        if (!ends.isEmpty() && (long) ends.peek()[0] == next) {
          ((Permit) ends.poll()[1]).close();
          inFlight--;
        } else {
          unlimitedEnds.poll();
        }
      }
      inFlightArea += (double) inFlight * (t - last);
      unlimitedArea += (double) unlimitedEnds.size() * (t - last);
      last = t;
      clock.now = t;
      offered++;
      long latency = (long) (Math.exp(mu + sigma * random.nextGaussian()) * 1e9);
      unlimitedEnds.add(t + latency);
      unlimitedMost = Math.max(unlimitedMost, unlimitedEnds.size());
      Acquisition a = limiter.tryAcquire("backend");
      if (a.isAcquired()) {
        admitted++;
        inFlight++;
        most = Math.max(most, inFlight);
        ends.add(new Object[] {t + latency, a.permit()});
      }
    }
    inFlightArea += (double) inFlight * (end - last);
    unlimitedArea += (double) unlimitedEnds.size() * (end - last);
    limiter.close();
    return new Phase(name, factor, offered, admitted, offered - admitted, inFlightArea / end,
        most, unlimitedArea / end, unlimitedMost);
  }
}

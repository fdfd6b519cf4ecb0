package dev.sluice.cli;

import dev.sluice.Clock;
import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * Runs arrivals through one algorithm on a virtual clock: exact and instant. The meters decide
 * with {@code tryAcquire} (or {@code fillUp} when asked), the queue with {@code reserve}.
 */
final class Simulation {
  /** What is done with each arrival by the meters. */
  enum Op { TRY, FILL }

  static final String KEY = "simulated";

  private Simulation() {}

  /** A clock moved by the simulation. */
  static final class VirtualClock implements Clock {
    volatile long now;

    @Override
    public long nanoTime() {
      return now;
    }

    @Override
    // one simulation thread moves this clock; volatile only so that other threads read it
    @SuppressWarnings("NonAtomicVolatileUpdate")
    public void sleep(long nanos) {
      now += nanos;
    }
  }

  /** The figures of one algorithm over the whole run. */
  static final class Result {
    final Algo algo;
    long offered;
    long admitted;
    long rejected;
    long delayed;
    long maxDelayNanos;
    double sumDelayNanos;
    long first100ms;
    long[] perSecond = new long[0];
    long longestRejectionRun;
    double admittedCost;

    Result(Algo algo) {
      this.algo = algo;
    }

    double meanDelayNanos() {
      return admitted == 0 ? 0 : sumDelayNanos / admitted;
    }
  }

  /** Samples for a plot: the level over time and what happened to each arrival. */
  static final class Trace {
    final long from;
    final long to;
    final long step;
    final List<double[]> level = new ArrayList<>();      // {t ns, level}
    final List<long[]> events = new ArrayList<>();       // {t ns, status, departure ns}
    static final int ADMITTED = 0;
    static final int REJECTED = 1;
    static final int DELAYED = 2;

    Trace(long from, long to, int samples) {
      this.from = from;
      this.to = to;
      this.step = Math.max(1, (to - from) / Math.max(1, samples));
    }
  }

  static Result run(Algo algo, List<Arrival> arrivals, double rate, double capacity, Op op,
      Trace trace, LongConsumer progress) {
    VirtualClock clock = new VirtualClock();
    RateLimiter limiter = Sluice.builder().limit(algo.limit(rate, capacity)).clock(clock)
        .maximumKeys(16).build();
    Result r = new Result(algo);
    if (arrivals.isEmpty()) {
      return r;
    }
    long t0 = arrivals.get(0).nanos();
    long[] perSecond = new long[16];
    int seconds = 0;
    long run = 0;
    long nextSample = trace == null ? Long.MAX_VALUE : trace.from;
    boolean detailed = trace != null && arrivals.size() <= 20_000;
    int i = 0;
    for (Arrival a : arrivals) {
      long t = a.nanos();
      while (nextSample <= t) {
        sample(limiter, clock, trace, nextSample);
        nextSample += trace.step;
      }
      clock.now = t;
      if (detailed) {
        trace.level.add(new double[] {t, level(limiter.check(KEY, 1e-9))});
      }
      Decision d = algo == Algo.LEAKY_QUEUE ? limiter.reserve(KEY, a.cost())
          : op == Op.FILL ? limiter.fillUp(KEY, a.cost()) : limiter.tryAcquire(KEY, a.cost());
      r.offered++;
      long departure = t;
      if (d.isAllowed()) {
        r.admitted++;
        r.admittedCost += a.cost();
        long delay = d.delayNanos();
        departure = t + delay;
        if (delay > 0) {
          r.delayed++;
        }
        r.maxDelayNanos = Math.max(r.maxDelayNanos, delay);
        r.sumDelayNanos += delay;
        if (departure - t0 < 100_000_000L) {
          r.first100ms++;
        }
        int s = (int) Math.min(Integer.MAX_VALUE - 1, (departure - t0) / 1_000_000_000L);
        if (s >= perSecond.length) {
          perSecond = Arrays.copyOf(perSecond, Math.max(s + 1, perSecond.length * 2));
        }
        perSecond[s]++;
        seconds = Math.max(seconds, s + 1);
        run = 0;
      } else {
        r.rejected++;
        run++;
        r.longestRejectionRun = Math.max(r.longestRejectionRun, run);
      }
      if (trace != null) {
        if (detailed) {
          trace.level.add(new double[] {t, level(d)});
        }
        int status = !d.isAllowed() ? Trace.REJECTED : d.delayNanos() > 0 ? Trace.DELAYED : Trace.ADMITTED;
        trace.events.add(new long[] {t, status, departure});
      }
      if (progress != null && (++i & 0xFFFF) == 0) {
        progress.accept(i);
      }
    }
    while (trace != null && nextSample <= trace.to) {
      sample(limiter, clock, trace, nextSample);
      nextSample += trace.step;
    }
    r.perSecond = Arrays.copyOf(perSecond, seconds);
    return r;
  }

  private static void sample(RateLimiter limiter, VirtualClock clock, Trace trace, long t) {
    clock.now = Math.max(clock.now, t);
    trace.level.add(new double[] {clock.now, level(limiter.check(KEY, 1e-9))});
  }

  /** The level the plot shows: capacity less what remains (tokens used, for a token bucket). */
  static double level(Decision d) {
    return d.level();
  }
}

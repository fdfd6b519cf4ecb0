package dev.sluice.cli;

import dev.sluice.Clock;
import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * Seed 002's fairness example in virtual time: clients share a service limit, first one alone,
 * then two, then ten. Two limiters see the same arrivals at the same instants: a {@link Group}
 * (the service as the parent, each client assured its share and borrowing idle capacity up to a
 * ceiling) and plain per-client limits at the assured rate. Deterministic per seed.
 */
final class FairnessSimulation {
  /** Width of a bin of the time series, ns. */
  static final long BIN = 100_000_000L;
  static final String[] NAMES = {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"};

  /**
   * The scenario. Capacities are {@code burstSeconds} of each rate; {@code offered} per client
   * in order, the last repeated for the clients after it.
   */
  record Settings(double total, double assured, double ceiling, double[] offered,
      double phaseSeconds, double burstSeconds, double reserve, int[] clients, long seed) {
    double parentCapacity() {
      return total * burstSeconds;
    }

    double seconds() {
      return phaseSeconds * clients.length;
    }

    double offered(int client) {
      return offered[Math.min(client, offered.length - 1)];
    }

    Group group() {
      Group g = Group.sharing(Limit.leakyBucket(parentCapacity(), Rate.perSecond(total))
              .named("service"))
          .assured(Limit.leakyBucket(assured * burstSeconds, Rate.perSecond(assured))
              .named("assured"))
          .ceiling(Limit.leakyBucket(ceiling * burstSeconds, Rate.perSecond(ceiling))
              .named("ceiling"));
      return Double.isNaN(reserve) ? g : g.reserve(reserve);
    }

    Limit perClient() {
      return Limit.leakyBucket(assured * burstSeconds, Rate.perSecond(assured)).named("per-client");
    }
  }

  /** What one run produced. */
  static final class Result {
    final Settings settings;
    final double reserve;
    final int bins;
    /** [client][bin] admitted by the group, by plain per-client limits, offered. */
    final long[][] group;
    final long[][] perClient;
    final long[][] offered;
    /** [client] admitted by the group above the client's assured limit. */
    final long[] borrowed;
    /** Most the group admitted beyond total·t in any interval of whole bins. */
    double mostBeyondRate;

    Result(Settings s, double reserve, int clients, int bins) {
      this.settings = s;
      this.reserve = reserve;
      this.bins = bins;
      group = new long[clients][bins];
      perClient = new long[clients][bins];
      offered = new long[clients][bins];
      borrowed = new long[clients];
    }

    /** Admitted per second by {@code client} in {@code phase}, after its first second. */
    double rate(long[][] series, int client, int phase) {
      int perPhase = (int) Math.round(settings.phaseSeconds() * 1e9 / BIN);
      int skip = (int) Math.min(perPhase - 1, Math.round(1e9 / BIN));
      long n = 0;
      for (int b = phase * perPhase + skip; b < (phase + 1) * perPhase && b < bins; b++) {
        n += series[client][b];
      }
      return n / ((perPhase - skip) * BIN / 1e9);
    }

    long total(long[][] series) {
      long n = 0;
      for (long[] row : series) {
        for (long v : row) {
          n += v;
        }
      }
      return n;
    }
  }

  private FairnessSimulation() {}

  static Result run(Settings s) {
    int most = 0;
    for (int c : s.clients()) {
      most = Math.max(most, c);
    }
    VirtualClock clock = new VirtualClock();
    Group g = s.group();
    RateLimiter group = Sluice.builder().group(g).clock(clock).build();
    RateLimiter plain = Sluice.builder().limit(s.perClient()).clock(clock).build();
    int bins = (int) Math.ceil(s.seconds() * 1e9 / BIN);
    Result r = new Result(s, g.reserve(), most, bins);
    SplittableRandom random = new SplittableRandom(s.seed());
    long phaseNanos = Math.round(s.phaseSeconds() * 1e9);
    // next arrival per client; a client sends only in phases that include it
    PriorityQueue<long[]> next = new PriorityQueue<>((a, b) -> Long.compare(a[0], b[0]));
    for (int c = 0; c < most; c++) {
      next.add(new long[] {gap(random, 1e9 / s.offered(c)), c});
    }
    long end = Math.round(s.seconds() * 1e9);
    while (!next.isEmpty()) {
      long[] e = next.poll();
      long t = e[0];
      if (t >= end) {
        continue;
      }
      int c = (int) e[1];
      int phase = (int) Math.min(s.clients().length - 1, t / phaseNanos);
      if (c < s.clients()[phase]) {
        clock.now = t;
        int bin = (int) (t / BIN);
        String key = NAMES[c];
        r.offered[c][bin]++;
        Decision d = group.tryAcquire(key);
        if (d.isAllowed()) {
          r.group[c][bin]++;
          if (d.isBorrowed()) {
            r.borrowed[c]++;
          }
        }
        if (plain.tryAcquire(key).isAllowed()) {
          r.perClient[c][bin]++;
        }
      }
      e[0] = t + gap(random, 1e9 / s.offered(c));
      next.add(e);
    }
    // the group's exact bound: in any interval of whole bins, admitted <= C + total * length
    double perBin = s.total() * BIN / 1e9;
    double best = Double.NEGATIVE_INFINITY;
    double lowest = 0;   // min over i of (P_i - perBin * i), P_0 = 0
    double prefix = 0;
    for (int b = 0; b < bins; b++) {
      for (long[] row : r.group) {
        prefix += row[b];
      }
      double here = prefix - perBin * (b + 1);
      best = Math.max(best, here - lowest);
      lowest = Math.min(lowest, here);
    }
    r.mostBeyondRate = best;
    return r;
  }

  private static long gap(SplittableRandom random, double mean) {
    return Math.max(1, Math.round(-Math.log(1 - random.nextDouble()) * mean));
  }

  /** The simulation's clock: set by the event loop, never slept on. */
  static final class VirtualClock implements Clock {
    long now;

    @Override
    public long nanoTime() {
      return now;
    }

    @Override
    public void sleep(long nanos) {
      throw new UnsupportedOperationException("the simulation never waits");
    }
  }
}

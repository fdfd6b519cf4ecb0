package dev.sluice.cli;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.FixedLimit;
import com.netflix.concurrency.limits.limiter.AbstractPartitionedLimiter;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.FairQueuing;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.QueueOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.UnaryOperator;

/**
 * The tenants experiment: a concurrency limit of {@code limit} permits in front of a backend of
 * as many workers, with log-normal service times, saturated by {@code tenants} tenants who each
 * send {@code load} of their equal share of its capacity (Poisson), while {@code flooders} of
 * them send {@code flood} times that. Every request waits for a permit up to {@code timeout}.
 * The same arrivals run, on a virtual clock, through Sluice's own {@link ConcurrencyLimiter}
 * with its waiters first in, first out (the default), last in, first out, or by fair queuing
 * among tenants; and through Netflix's partitioned limiter, a partition per tenant (it has no
 * queue: it refuses at once, and admits a tenant with nothing in flight even over the limit, so
 * its calls beyond the workers wait in the backend's queue, and count their wait there). Each
 * strategy runs once more with nobody flooding, for the waits a quiet tenant sees without the
 * flood.
 *
 * <p>A quiet tenant asks for less than an equal share, so its max-min fair share is its whole
 * demand: the share of its requests served is the share of its fair share it got.
 */
final class TenantsSimulation {
  private TenantsSimulation() {}

  /** The first seconds of a run, not counted: the limiters' memory of demand fills. */
  static final double WARM_UP = 5;

  /** Bytes a fair queue takes: its waiters' count (int) and its demand (double). */
  static final int QUEUE_BYTES = 12;

  /**
   * A scenario.
   *
   * @param tenants how many tenants
   * @param flooders how many of them flood
   * @param flood how many times its share a flooder sends
   * @param load each tenant's demand as a share of its equal share of the capacity
   * @param limit the permits (the backend's workers)
   * @param median the median service time, seconds
   * @param p99 the 99th percentile service time, seconds
   * @param timeout how long a request waits for a permit, seconds
   * @param seconds the run's length, the first {@value #WARM_UP} not counted
   * @param fair the fair queuing strategy's settings
   * @param seed the random seed
   */
  record Settings(int tenants, int flooders, double flood, double load, int limit, double median,
      double p99, double timeout, double seconds, FairQueuing fair, long seed) {
    double sigma() {
      return Math.log(p99 / median) / BulkheadSimulation.Z99;
    }

    double meanService() {
      return median * Math.exp(sigma() * sigma() / 2);
    }

    /** The backend's capacity, requests a second. */
    double capacity() {
      return limit / meanService();
    }

    boolean floods(int tenant) {
      return tenant < flooders;
    }

    /** The same scenario with other fair queuing settings. */
    Settings withFair(FairQueuing f) {
      return new Settings(tenants, flooders, flood, load, limit, median, p99, timeout, seconds, f,
          seed);
    }

    /** The same scenario, {@code s} seconds long. */
    Settings withSeconds(double s) {
      return new Settings(tenants, flooders, flood, load, limit, median, p99, timeout, s, fair,
          seed);
    }

    /** The same scenario with another seed. */
    Settings withSeed(long s) {
      return new Settings(tenants, flooders, flood, load, limit, median, p99, timeout, seconds,
          fair, s);
    }
  }

  /**
   * One strategy's figures.
   *
   * @param strategy its name
   * @param worstQuietShare the worst quiet tenant's share of its requests served
   * @param medianQuietShare the median quiet tenant's
   * @param quietP99WaitMs the quiet tenants' 99th percentile wait for a permit, served requests
   * @param calmP99WaitMs the same in the run without the flood
   * @param floodShare the flooders' share of their requests served
   * @param busy the workers' use while there was work (held or waiting)
   */
  record Result(String strategy, double worstQuietShare, double medianQuietShare,
      double quietP99WaitMs, double calmP99WaitMs, double floodShare, double busy) {
    /** The bar: every quiet tenant 90% of its fair share, p99 wait within 2x, 95% busy. */
    boolean meetsBar() {
      return worstQuietShare >= 0.90 && quietP99WaitMs <= 2 * Math.max(calmP99WaitMs, 1)
          && busy >= 0.95;
    }
  }

  /** The stock scenarios: 100 tenants, one flooding; 10,000 tenants, 1% flooding. */
  static List<Settings> defaults(long seed, double seconds) {
    return List.of(
        new Settings(100, 1, 10, 0.95, 20, 0.020, 0.060, 1.0, seconds,
            FairQueuing.of(256, 4, 1_000), seed),
        new Settings(10_000, 100, 10, 0.95, 20, 0.020, 0.060, 1.0, seconds,
            FairQueuing.of(16_384, 4, 1_000).withMemory(Duration.ofSeconds(30)), seed));
  }

  /** The strategies, in the table's order. */
  static final List<String> STRATEGIES = List.of("FIFO", "LIFO", "Netflix partitions",
      "fair queuing");

  private record Request(long at, int tenant, long service) {}

  /** The arrivals, every tenant's Poisson stream merged, the same for every strategy. */
  private static List<Request> arrivals(Settings s, boolean flooding) {
    Random random = new Random(s.seed());
    double share = s.capacity() / s.tenants() * s.load();
    List<Request> all = new ArrayList<>();
    long end = (long) (s.seconds() * 1e9);
    for (int t = 0; t < s.tenants(); t++) {
      double rate = (flooding && s.floods(t) ? s.flood() : 1) * share;
      double at = -Math.log(1 - random.nextDouble()) / rate;
      while (at * 1e9 < end) {
        long service = (long) (Math.exp(Math.log(s.median()) + s.sigma() * random.nextGaussian())
            * 1e9);
        all.add(new Request((long) (at * 1e9), t, service));
        at += -Math.log(1 - random.nextDouble()) / rate;
      }
    }
    all.sort((a, b) -> Long.compare(a.at, b.at));
    return all;
  }

  /** Every strategy on the scenario, each beside its own run without the flood. */
  static List<Result> run(Settings s) {
    List<Request> flooding = arrivals(s, true);
    List<Request> calm = arrivals(s, false);
    List<Result> results = new ArrayList<>();
    for (String name : STRATEGIES) {
      Run withFlood = run(s, name, flooding);
      Run without = run(s, name, calm);
      results.add(withFlood.result(name, s, without));
    }
    return results;
  }

  private static Run run(Settings s, String strategy, List<Request> arrivals) {
    return switch (strategy) {
      case "LIFO" -> sluice(s, b -> b.queueOrder(QueueOrder.LIFO), arrivals);
      case "fair queuing" -> sluice(s, b -> b.fairQueuing(s.fair()), arrivals);
      case "Netflix partitions" -> netflix(s, arrivals);
      default -> sluice(s, b -> b, arrivals);
    };
  }

  /** What one run counted. */
  private static final class Run {
    final Settings s;
    final long[] offered;
    final long[] served;
    final List<Double> quietWaits = new ArrayList<>();
    final long warm = (long) (WARM_UP * 1e9);
    long busyNanos;
    long workNanos;
    long lastAt;

    Run(Settings s) {
      this.s = s;
      offered = new long[s.tenants()];
      served = new long[s.tenants()];
    }

    /** Time moves to {@code at}: the workers' use since the last event, while there was work. */
    void tick(long at, int busy, boolean work) {
      if (lastAt >= warm && work) {
        busyNanos += (long) Math.min(busy, s.limit()) * (at - lastAt);
        workNanos += (long) s.limit() * (at - lastAt);
      }
      lastAt = at;
    }

    void arrived(Request r) {
      if (r.at >= warm) {
        offered[r.tenant]++;
      }
    }

    /** {@code r} starts its service at {@code now}. */
    void started(Request r, long now) {
      if (r.at >= warm) {
        served[r.tenant]++;
        if (!s.floods(r.tenant)) {
          quietWaits.add((now - r.at) / 1e6);
        }
      }
    }

    Result result(String name, Settings s, Run calm) {
      double[] quiet = new double[s.tenants() - s.flooders()];
      long floodOffered = 0;
      long floodServed = 0;
      for (int t = 0, q = 0; t < s.tenants(); t++) {
        if (s.floods(t)) {
          floodOffered += offered[t];
          floodServed += served[t];
        } else {
          quiet[q++] = offered[t] == 0 ? 1 : (double) served[t] / offered[t];
        }
      }
      Arrays.sort(quiet);
      return new Result(name, quiet.length == 0 ? 1 : quiet[0],
          quiet.length == 0 ? 1 : quiet[quiet.length / 2], p99(quietWaits), p99(calm.quietWaits),
          floodOffered == 0 ? 1 : (double) floodServed / floodOffered,
          workNanos == 0 ? 1 : (double) busyNanos / workNanos);
    }
  }

  private static double p99(List<Double> values) {
    return OverloadSimulation.percentile(values, 0.99);
  }

  private record Done(long at, long seq, Object token) {}

  /** Sluice's limiter, built by {@code strategy}, on one set of arrivals. */
  // FutureReturnValueIgnored: the callback consumes the answer; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private static Run sluice(Settings s, UnaryOperator<ConcurrencyLimiter.Builder> strategy,
      List<Request> arrivals) {
    OverloadSimulation.VirtualClock clock = new OverloadSimulation.VirtualClock();
    OverloadSimulation.VirtualScheduler scheduler = new OverloadSimulation.VirtualScheduler(clock);
    ConcurrencyLimiter limiter = strategy.apply(ConcurrencyLimiter.builder().limit(s.limit())
        .lease(Duration.ofDays(1)).maxWaiters(1_000_000).clock(clock).scheduler(scheduler))
        .build();
    Run run = new Run(s);
    PriorityQueue<Done> done = new PriorityQueue<>((a, b) -> a.at != b.at
        ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    long[] seq = {0};
    int[] inFlight = {0};
    long end = (long) (s.seconds() * 1e9);
    Duration timeout = Duration.ofNanos((long) (s.timeout() * 1e9));
    int next = 0;
    while (true) {
      long arrival = next < arrivals.size() ? arrivals.get(next).at : Long.MAX_VALUE;
      long finish = done.isEmpty() ? Long.MAX_VALUE : done.peek().at;
      long timer = scheduler.next();
      long at = Math.min(arrival, Math.min(finish, timer));
      if (at >= end) {
        break;
      }
      run.tick(at, inFlight[0], inFlight[0] > 0 || limiter.waiting("backend") > 0);
      clock.now = at;
      if (timer == at) {
        scheduler.runUntil(at);
        continue;
      }
      if (finish == at) {
        ((Permit) done.poll().token).close();
        inFlight[0]--;
        continue;
      }
      Request r = arrivals.get(next++);
      run.arrived(r);
      limiter.acquireAsync("backend", "tenant-" + r.tenant, 1, Priority.NORMAL, timeout)
          .thenAccept((Acquisition a) -> {
            if (a.isAcquired()) {
              inFlight[0]++;
              done.add(new Done(clock.now + r.service, seq[0]++, a.permit()));
              run.started(r, clock.now);
            }
          });
    }
    limiter.close();
    return run;
  }

  /** Netflix's partitioned limiter's builder (its own is abstract). */
  private static final class Partitioned
      extends AbstractPartitionedLimiter.Builder<Partitioned, String> {
    @Override
    protected Partitioned self() {
      return this;
    }
  }

  private record Admitted(Request request, Limiter.Listener listener) {}

  /**
   * Netflix's partitioned limiter (a partition of 1/tenants per tenant, a fixed limit) on one set
   * of arrivals. It refuses at once; what it admits goes to the backend's workers, or waits in the
   * backend's queue for one, and gives up (dropped, not served) when its timeout passes there.
   */
  private static Run netflix(Settings s, List<Request> arrivals) {
    OverloadSimulation.VirtualClock clock = new OverloadSimulation.VirtualClock();
    Partitioned b = new Partitioned();
    b.limit(FixedLimit.of(s.limit())).nanoClock(() -> clock.now).partitionResolver(t -> t);
    for (int t = 0; t < s.tenants(); t++) {
      b.partition("tenant-" + t, (1 - 1e-9) / s.tenants());   // summed, at most 1
    }
    Limiter<String> limiter = b.build();
    Run run = new Run(s);
    PriorityQueue<Done> done = new PriorityQueue<>((x, y) -> x.at != y.at
        ? Long.compare(x.at, y.at) : Long.compare(x.seq, y.seq));
    ArrayDeque<Admitted> backlog = new ArrayDeque<>();
    long seq = 0;
    int busy = 0;
    long end = (long) (s.seconds() * 1e9);
    long timeout = (long) (s.timeout() * 1e9);
    int next = 0;
    while (true) {
      long arrival = next < arrivals.size() ? arrivals.get(next).at : Long.MAX_VALUE;
      long finish = done.isEmpty() ? Long.MAX_VALUE : done.peek().at;
      long at = Math.min(arrival, finish);
      if (at >= end) {
        break;
      }
      run.tick(at, busy, busy > 0 || !backlog.isEmpty());
      clock.now = at;
      if (finish == at) {
        ((Limiter.Listener) done.poll().token).onSuccess();
        busy--;
      } else {
        Request r = arrivals.get(next++);
        run.arrived(r);
        Optional<Limiter.Listener> l = limiter.acquire("tenant-" + r.tenant);
        if (l.isPresent()) {
          backlog.add(new Admitted(r, l.get()));
        }
      }
      // free workers take the backend's queue in order; those past their timeout gave up
      while (busy < s.limit() && !backlog.isEmpty()) {
        Admitted a = backlog.poll();
        if (at - a.request.at > timeout) {
          a.listener.onDropped();
          continue;
        }
        busy++;
        done.add(new Done(at + a.request.service, seq++, a.listener));
        run.started(a.request, at);
      }
    }
    return run;
  }
}

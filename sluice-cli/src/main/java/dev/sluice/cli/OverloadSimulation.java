package dev.sluice.cli;

import com.netflix.concurrency.limits.limit.AIMDLimit;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limit.VegasLimit;
import dev.sluice.Clock;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Scheduler;
import dev.sluice.Sluice;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.AimdLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.GradientLimit;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The overload experiment (issue 28): a backend of C workers with log-normal service times,
 * offered Poisson traffic at a share of its capacity from clients with deadlines and priorities,
 * and a scenario in which its capacity halves at {@code dropAt} (half the workers die, or every
 * service takes twice as long) and comes back at {@code backAt}; optionally a retry storm, where
 * refused and timed-out requests are sent again. Every strategy runs on the same arrivals in the
 * same virtual time: no limit, a client rate limit, a fixed concurrency limit, Sluice's adaptive
 * limits (through Sluice's own {@link ConcurrencyLimiter} on a virtual clock, with priority
 * shares), and Netflix's {@code Gradient2Limit}, {@code VegasLimit} and {@code AIMDLimit}
 * themselves (their {@code onSample} takes its times as arguments), in front of a limiter that
 * admits while fewer than the limit are in flight, as Netflix's {@code SimpleLimiter} does.
 *
 * <p>A request's latency runs from its arrival to the end of its service; it is good when that
 * is within its deadline. A permit ends when the backend answers: {@link Outcome#DROPPED} when
 * the answer came after the deadline (the client had given up), {@link Outcome#SUCCESS}
 * otherwise.
 */
final class OverloadSimulation {
  private OverloadSimulation() {}

  /** How the backend loses half its capacity. */
  enum Variant {
    /** Half the workers die (each finishes the call it has). */
    WORKERS_DIE,
    /** Every service takes twice as long. */
    SLOWER
  }

  /**
   * The run's settings.
   *
   * @param workers the backend's workers before the drop
   * @param median the median service time, seconds
   * @param p99 the 99th percentile service time, seconds
   * @param load the offered load as a share of the capacity before the drop
   * @param deadline each request's deadline from its arrival, seconds
   * @param seconds the run's length
   * @param dropAt when capacity halves
   * @param backAt when it comes back
   * @param variant how it halves
   * @param retries whether refused and timed-out requests are sent again (up to 3 times)
   * @param critical the share of requests that are critical
   * @param sheddable the share that are sheddable (the rest are normal)
   * @param max the ceiling of every adaptive limit (Sluice's, and Netflix's raised ones)
   * @param seed the random seed
   * @param stallEvery the mean time between two stalls of the client's host, seconds (0: none)
   * @param stallLength how long each stall lasts, seconds: the host runs nothing (a GC pause, a
   *     starved CPU), so arrivals and answers in it reach the limiter when it ends; the backend
   *     goes on serving
   */
  record Settings(int workers, double median, double p99, double load, double deadline,
      double seconds, double dropAt, double backAt, Variant variant, boolean retries,
      double critical, double sheddable, int max, long seed, double stallEvery,
      double stallLength) {
    Settings(int workers, double median, double p99, double load, double deadline,
        double seconds, double dropAt, double backAt, Variant variant, boolean retries,
        double critical, double sheddable, int max, long seed) {
      this(workers, median, p99, load, deadline, seconds, dropAt, backAt, variant, retries,
          critical, sheddable, max, seed, 0, 0);
    }

    /**
     * The stalls, as pairs of start and end in nanoseconds: each starts {@code stallEvery} after
     * the one before, give or take a quarter (seeded).
     */
    long[] stalls() {
      if (stallEvery <= 0 || stallLength <= 0) {
        return new long[0];
      }
      Random random = new Random(seed * 131 + 17);
      List<Long> all = new ArrayList<>();
      double t = stallEvery * (0.75 + 0.5 * random.nextDouble());
      while (t < seconds) {
        all.add((long) (t * 1e9));
        all.add((long) ((t + stallLength) * 1e9));
        t += stallLength + stallEvery * (0.75 + 0.5 * random.nextDouble());
      }
      long[] a = new long[all.size()];
      for (int i = 0; i < a.length; i++) {
        a[i] = all.get(i);
      }
      return a;
    }

    double sigma() {
      return Math.log(p99 / median) / BulkheadSimulation.Z99;
    }

    double meanService() {
      return median * Math.exp(sigma() * sigma() / 2);
    }

    /** Arrivals per second of first attempts. */
    double offered() {
      return load * workers / meanService();
    }

    boolean degraded(double t) {
      return t >= dropAt && t < backAt;
    }

    /** The backend's capacity at {@code t}, requests per second. */
    double capacity(double t) {
      return degraded(t) ? workers / meanService() / 2 : workers / meanService();
    }

    /** The unloaded 99th percentile latency at the backend's speed at {@code t}. */
    double unloadedP99(double t) {
      return variant == Variant.SLOWER && degraded(t) ? 2 * p99 : p99;
    }
  }

  /** One strategy's admission decisions and what it learns. */
  interface Strategy {
    String name();

    /** A token for an admitted request, or null when refused. */
    Object admit(long now, int priority);

    /** The request admitted with {@code token} got its answer. */
    void end(Object token, long now, long rttNanos, boolean late);

    /** The limit now; -1 when there is none. */
    int limit();
  }

  /** One strategy's figures. */
  record Result(String name, double[] goodShare, double[] limit, double[] p99Ms, double degradedGoodput,
      double worstSecondAfterDrop, double worstSecondAfterBack, double steadyP99Ms,
      double degradedP50Ms, double degradedP99Ms, double degradedUnloadedP99Ms,
      double steadyRefused, double criticalServed, double settleAfterDrop,
      double settleAfterBack) {
    /** Whether it meets issue 28's bar, and if not, why. */
    List<String> misses(Settings s) {
      List<String> why = new ArrayList<>();
      if (degradedGoodput < 0.95) {
        why.add(String.format(Locale.ROOT, "degraded goodput %.1f%% < 95%%",
            100 * degradedGoodput));
      }
      if (Math.min(worstSecondAfterDrop, worstSecondAfterBack) < 0.90) {
        why.add(String.format(Locale.ROOT, "a second from 5 s after a change at %.1f%%"
            + " < 90%%", 100 * Math.min(worstSecondAfterDrop, worstSecondAfterBack)));
      }
      if (degradedP99Ms > 2 * degradedUnloadedP99Ms || steadyP99Ms > 2 * s.p99() * 1000) {
        why.add("p99 above 2x the unloaded p99");
      }
      if (steadyRefused >= 0.01) {
        why.add(String.format(Locale.ROOT, "%.2f%% refused at 70%% load",
            100 * steadyRefused));
      }
      if (criticalServed < 0.999) {
        why.add(String.format(Locale.ROOT, "critical served %.2f%% < 99.9%%",
            100 * criticalServed));
      }
      return why;
    }
  }

  // ------------------------------------------------------------------------------ strategies

  /** The strategies, each made fresh for a run. */
  static List<Supplier<Strategy>> strategies(Settings s) {
    List<Supplier<Strategy>> all = new ArrayList<>();
    all.add(() -> new Unlimited());
    all.add(() -> new ClientRateLimit(s));
    all.add(() -> new SluiceLimiter("fixed limit " + s.workers(),
        b -> b.limit(s.workers())));
    all.add(() -> new SluiceLimiter("Sluice AIMD", b -> b.adaptive(() -> AimdLimit.builder()
        .max(s.max()).build()).share(Priority.NORMAL, 0.95).share(Priority.SHEDDABLE, 0.9)));
    all.add(() -> new SluiceLimiter("Sluice gradient", b -> b.adaptive(() -> GradientLimit
        .builder().max(s.max()).build()).share(Priority.NORMAL, 0.9)
        .share(Priority.SHEDDABLE, 0.8)));
    all.add(() -> new Netflix("Netflix Gradient2", Gradient2Limit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix Gradient2 max " + s.max(),
        Gradient2Limit.newBuilder().maxConcurrency(s.max()).build()));
    all.add(() -> new Netflix("Netflix Vegas", VegasLimit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix AIMD", AIMDLimit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix AIMD max " + s.max(),
        AIMDLimit.newBuilder().maxLimit(s.max()).build()));
    return all;
  }

  static final class Unlimited implements Strategy {
    @Override
    public String name() {
      return "no limit";
    }

    @Override
    public Object admit(long now, int priority) {
      return Boolean.TRUE;
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {}

    @Override
    public int limit() {
      return -1;
    }
  }

  /** The virtual clock Sluice's limiters run on; nothing is ever scheduled. */
  static final class VirtualClock implements Clock {
    long now;

    @Override
    public long nanoTime() {
      return now;
    }
  }

  private static final Scheduler NO_SCHEDULER = (task, delayNanos) -> { };

  /** A client-side rate limit at the backend's healthy capacity (a leaky bucket). */
  static final class ClientRateLimit implements Strategy {
    private final VirtualClock clock = new VirtualClock();
    private final RateLimiter limiter;

    ClientRateLimit(Settings s) {
      double rate = s.workers() / s.meanService();
      limiter = Sluice.builder().limit(Limit.leakyBucket(Math.max(1, rate / 10),
          Rate.perSecond(rate))).clock(clock).scheduler(NO_SCHEDULER).build();
    }

    @Override
    public String name() {
      return "client rate limit";
    }

    @Override
    public Object admit(long now, int priority) {
      clock.now = now;
      return limiter.tryAcquire("backend").isAllowed() ? Boolean.TRUE : null;
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {}

    @Override
    public int limit() {
      return -1;
    }
  }

  /** Sluice's in-memory concurrency limiter on the virtual clock. */
  static final class SluiceLimiter implements Strategy {
    private final String name;
    private final VirtualClock clock = new VirtualClock();
    private final ConcurrencyLimiter limiter;

    SluiceLimiter(String name,
        UnaryOperator<ConcurrencyLimiter.Builder> settings) {
      this.name = name;
      this.limiter = settings.apply(ConcurrencyLimiter.builder().lease(Duration.ofDays(1))
          .maxWaiters(0).clock(clock).scheduler(NO_SCHEDULER)).build();
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public Object admit(long now, int priority) {
      clock.now = now;
      Acquisition a = limiter.tryAcquire("backend", 1, PRIORITIES[priority]);
      return a.isAcquired() ? a.permit() : null;
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {
      clock.now = now;
      ((Permit) token).release(late ? Outcome.DROPPED : Outcome.SUCCESS);
    }

    @Override
    public int limit() {
      return limiter.limit("backend");
    }
  }

  private static final Priority[] PRIORITIES = {Priority.CRITICAL, Priority.NORMAL,
      Priority.SHEDDABLE};

  /** A Netflix limit in front of SimpleLimiter's rule: admit while in flight is under it. */
  static final class Netflix implements Strategy {
    private final String name;
    private final com.netflix.concurrency.limits.Limit limit;
    private int inFlight;

    Netflix(String name, com.netflix.concurrency.limits.Limit limit) {
      this.name = name;
      this.limit = limit;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public Object admit(long now, int priority) {
      if (inFlight >= limit.getLimit()) {
        return null;
      }
      inFlight++;
      return new long[] {now, inFlight};
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {
      long[] t = (long[]) token;
      inFlight--;
      limit.onSample(t[0], rttNanos, (int) t[1], late);
    }

    @Override
    public int limit() {
      return limit.getLimit();
    }
  }

  // ------------------------------------------------------------------------------ the run

  /** A request: its arrival, deadline, priority, service time, and the strategy's token. */
  private static final class Request {
    final long arrival;
    final long deadline;
    final int priority;
    final int attempt;
    final boolean first;
    long service;
    Object token;

    Request(long arrival, long deadline, int priority, int attempt) {
      this.arrival = arrival;
      this.deadline = deadline;
      this.priority = priority;
      this.attempt = attempt;
      this.first = attempt == 0;
    }
  }

  /** The first attempts, the same for every strategy. */
  private static List<Request> arrivals(Settings s) {
    Random random = new Random(s.seed());
    List<Request> all = new ArrayList<>();
    double rate = s.offered();
    double t = 0;
    while (true) {
      t += -Math.log(1 - random.nextDouble()) / rate;
      if (t >= s.seconds()) {
        return all;
      }
      double u = random.nextDouble();
      int priority = u < s.critical() ? 0 : u < s.critical() + s.sheddable() ? 2 : 1;
      long at = (long) (t * 1e9);
      Request r = new Request(at, at + (long) (s.deadline() * 1e9), priority, 0);
      r.service = (long) (Math.exp(Math.log(s.median()) + s.sigma() * random.nextGaussian())
          * 1e9);
      all.add(r);
    }
  }

  private record Event(long at, long seq, int kind, Request request) {}

  private static final int ARRIVAL = 0;
  private static final int DONE = 1;
  private static final int CAPACITY = 2;
  /** An answer reaches the client (after a stall of its host, later than the backend gave it). */
  private static final int ANSWER = 3;

  /** Runs every strategy on the same arrivals. */
  static List<Result> run(Settings s) {
    List<Request> arrivals = arrivals(s);
    List<Result> results = new ArrayList<>();
    for (Supplier<Strategy> make : strategies(s)) {
      results.add(run(s, make.get(), arrivals));
    }
    return results;
  }

  /** One strategy on the settings' arrivals. */
  static Result runOne(Settings s, Strategy strategy) {
    return run(s, strategy, arrivals(s));
  }

  static Result run(Settings s, Strategy strategy, List<Request> firstAttempts) {
    int secs = (int) Math.ceil(s.seconds());
    double[] good = new double[secs];
    double[] offeredPerSecond = new double[secs];
    double[] limitAt = new double[secs];
    List<List<Double>> latencies = new ArrayList<>();
    for (int i = 0; i < secs; i++) {
      latencies.add(new ArrayList<>());
    }
    long steadyOffered = 0;
    long steadyRefused = 0;
    long criticalOffered = 0;
    long criticalGood = 0;
    Random random = new Random(s.seed() * 31 + 7);
    PriorityQueue<Event> events = new PriorityQueue<>((a, b) -> a.at != b.at
        ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    long seq = 0;
    for (Request r : firstAttempts) {
      events.add(new Event(r.arrival, seq++, ARRIVAL, r));
    }
    events.add(new Event((long) (s.dropAt() * 1e9), seq++, CAPACITY, null));
    events.add(new Event((long) (s.backAt() * 1e9), seq++, CAPACITY, null));
    int workers = s.workers();
    int busy = 0;
    ArrayDeque<Request> queue = new ArrayDeque<>();
    long end = (long) (s.seconds() * 1e9);
    int nextSecond = 0;
    long[] stalls = s.stalls();
    int stall = 0;
    while (!events.isEmpty()) {
      Event e = events.poll();
      if (e.at >= end) {
        break;
      }
      while (stall < stalls.length && stalls[stall + 1] <= e.at) {
        stall += 2;
      }
      boolean stalled = stall < stalls.length && e.at >= stalls[stall];
      if (stalled && e.kind == ARRIVAL) {
        // the client's host is stalled: the request is sent when it runs again
        events.add(new Event(stalls[stall + 1], seq++, ARRIVAL, e.request));
        continue;
      }
      while (nextSecond < secs && e.at >= (long) nextSecond * 1_000_000_000L) {
        limitAt[nextSecond++] = strategy.limit();
      }
      double t = e.at / 1e9;
      if (e.kind == CAPACITY) {
        workers = s.variant() == Variant.WORKERS_DIE && s.degraded(t) ? s.workers() / 2
            : s.workers();
        while (busy < workers && !queue.isEmpty()) {
          busy++;
          start(s, queue.poll(), e.at, events, seq++);
        }
        continue;
      }
      Request r = e.request;
      int second = (int) t;
      if (e.kind == ARRIVAL) {
        if (r.first) {
          offeredPerSecond[second]++;
          if (r.priority == 0) {
            criticalOffered++;
          }
          if (t >= 10 && t < s.dropAt()) {
            steadyOffered++;
          }
        }
        r.token = strategy.admit(e.at, r.priority);
        if (r.token == null) {
          if (r.first && t >= 10 && t < s.dropAt()) {
            steadyRefused++;
          }
          retry(s, r, e.at, random, events, seq++);
          continue;
        }
        if (busy < workers) {
          busy++;
          start(s, r, e.at, events, seq++);
        } else {
          queue.add(r);
        }
        continue;
      }
      if (e.kind == DONE) {
        // the worker takes the next request; the answer reaches the strategy, at once or when
        // a stall of the client's host ends
        busy--;
        while (busy < workers && !queue.isEmpty()) {
          busy++;
          start(s, queue.poll(), e.at, events, seq++);
        }
        if (stalled) {
          events.add(new Event(stalls[stall + 1], seq++, ANSWER, r));
          continue;
        }
      }
      long latency = e.at - r.arrival;
      boolean late = e.at > r.deadline;
      strategy.end(r.token, e.at, latency, late);
      latencies.get(second).add(latency / 1e6);
      if (!late) {
        good[second]++;
        if (r.priority == 0 && r.first) {
          criticalGood++;
        }
      } else {
        retry(s, r, r.deadline, random, events, seq++);
      }
    }
    while (nextSecond < secs) {
      limitAt[nextSecond++] = strategy.limit();
    }
    return result(s, strategy.name(), good, offeredPerSecond, limitAt, latencies,
        steadyOffered == 0 ? 0 : (double) steadyRefused / steadyOffered,
        criticalOffered == 0 ? 1 : (double) criticalGood / criticalOffered);
  }

  private static void start(Settings s, Request r, long now, PriorityQueue<Event> events,
      long seq) {
    long service = r.service;
    if (s.variant() == Variant.SLOWER && s.degraded(now / 1e9)) {
      service *= 2;
    }
    events.add(new Event(now + service, seq, DONE, r));
  }

  /** In a retry storm, a refused or timed-out request comes again (up to 3 retries). */
  private static void retry(Settings s, Request r, long at, Random random,
      PriorityQueue<Event> events, long seq) {
    if (!s.retries() || r.attempt >= 3) {
      return;
    }
    long backoff = (long) ((0.05 + 0.1 * random.nextDouble()) * 1e9);
    long when = at + backoff;
    Request again = new Request(when, when + (r.deadline - r.arrival), r.priority,
        r.attempt + 1);
    again.service = r.service;
    events.add(new Event(when, seq, ARRIVAL, again));
  }

  private static Result result(Settings s, String name, double[] good, double[] offered,
      double[] limitAt, List<List<Double>> latencies, double steadyRefused,
      double criticalServed) {
    int secs = good.length;
    double[] share = new double[secs];
    double[] p99 = new double[secs];
    for (int i = 0; i < secs; i++) {
      double demand = Math.min(offered[i], s.capacity(i + 0.5));
      share[i] = demand == 0 ? 1 : good[i] / demand;
      p99[i] = percentile(latencies.get(i), 0.99);
    }
    int drop = (int) s.dropAt();
    int back = (int) s.backAt();
    double goodSum = 0;
    double demandSum = 0;
    for (int i = drop; i < back; i++) {
      goodSum += good[i];
      demandSum += Math.min(offered[i], s.capacity(i + 0.5));
    }
    double worstAfterDrop = 1;
    for (int i = drop + 5; i < back; i++) {
      worstAfterDrop = Math.min(worstAfterDrop, share[i]);
    }
    double worstAfterBack = 1;
    for (int i = back + 5; i < secs; i++) {
      worstAfterBack = Math.min(worstAfterBack, share[i]);
    }
    List<Double> steady = new ArrayList<>();
    List<Double> degraded = new ArrayList<>();
    for (int i = 0; i < secs; i++) {
      if (i >= 10 && i < drop) {
        steady.addAll(latencies.get(i));
      } else if (i >= drop + 5 && i < back) {
        degraded.addAll(latencies.get(i));
      }
    }
    return new Result(name, share, limitAt, p99, demandSum == 0 ? 1 : goodSum / demandSum,
        worstAfterDrop, worstAfterBack, percentile(steady, 0.99), percentile(degraded, 0.5),
        percentile(degraded, 0.99), s.unloadedP99(s.dropAt() + 1) * 1000, steadyRefused,
        criticalServed, settle(share, drop, back), settle(share, back, secs));
  }

  /** Seconds from {@code from} until every later second of the phase is at 90% or more. */
  static double settle(double[] share, int from, int to) {
    int last = from;
    for (int i = from; i < to; i++) {
      if (share[i] < 0.9) {
        last = i + 1;
      }
    }
    return last >= to ? Double.POSITIVE_INFINITY : last - from;
  }

  static double percentile(List<Double> values, double q) {
    if (values.isEmpty()) {
      return 0;
    }
    double[] a = new double[values.size()];
    for (int i = 0; i < a.length; i++) {
      a[i] = values.get(i);
    }
    Arrays.sort(a);
    return a[Math.min(a.length - 1, (int) Math.ceil(q * a.length) - 1)];
  }

  /** The stock settings of the experiment: 100 workers, 20 ms median, 70% load. */
  static Settings defaults(Variant variant, boolean retries) {
    return new Settings(100, 0.020, 0.060, 0.7, 0.2, 120, 30, 90, variant, retries, 0.05, 0.3,
        1000, 1);
  }
}

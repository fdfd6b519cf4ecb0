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
import dev.sluice.concurrency.RetryBudget;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The overload experiment: a backend of C workers with log-normal service times,
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
    SLOWER,
    /**
     * A CPU-bound backend: {@code workers} is its cores, shared by the calls in service
     * (processor sharing) among at most {@link #THREADS_PER_CORE} threads a core; each call's
     * service time is its CPU time at a whole core. While degraded a neighbour takes half the
     * cores, so a call's time grows with the contention, as on a shared host.
     */
    CPU
  }

  /** The CPU variant's threads per core: calls beyond them wait for a thread, using no CPU. */
  static final int THREADS_PER_CORE = 8;

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
   * @param stallLength how long each stall lasts, seconds: the host of the limiter and the
   *     backend runs nothing (a GC pause, a starved CPU): arrivals in it reach the limiter when it
   *     ends, and every call in service takes that much longer
   * @param waits whether Sluice's limiters let a request wait for a permit, up to its deadline
   *     less the key's mean hold time ({@link ConcurrencyLimiter#usefulWait})
   * @param retryBudget with {@code retries}, the clients' retry budget ({@link RetryBudget}):
   *     retries up to this share of the answers in time over 10 s, plus 10 a second; 0: none
   */
  record Settings(int workers, double median, double p99, double load, double deadline,
      double seconds, double dropAt, double backAt, Variant variant, boolean retries,
      double critical, double sheddable, int max, long seed, double stallEvery,
      double stallLength, boolean waits, double retryBudget) {
    Settings(int workers, double median, double p99, double load, double deadline,
        double seconds, double dropAt, double backAt, Variant variant, boolean retries,
        double critical, double sheddable, int max, long seed) {
      this(workers, median, p99, load, deadline, seconds, dropAt, backAt, variant, retries,
          critical, sheddable, max, seed, 0, 0, false, 0);
    }

    Settings(int workers, double median, double p99, double load, double deadline,
        double seconds, double dropAt, double backAt, Variant variant, boolean retries,
        double critical, double sheddable, int max, long seed, double stallEvery,
        double stallLength, boolean waits) {
      this(workers, median, p99, load, deadline, seconds, dropAt, backAt, variant, retries,
          critical, sheddable, max, seed, stallEvery, stallLength, waits, 0);
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

    /** The unloaded 99th percentile latency at the backend's speed at {@code t} (a lone call). */
    double unloadedP99(double t) {
      return variant == Variant.SLOWER && degraded(t) ? 2 * p99 : p99;
    }
  }

  /** One strategy's admission decisions and what it learns. */
  interface Strategy {
    String name();

    /** A token for an admitted request, or null when refused. */
    Object admit(long now, int priority);

    /**
     * Admits, refuses or queues a request whose deadline is {@code deadline}: {@code answer} is
     * told the token (null: refused) and the time, at once or when the wait ends. A strategy
     * that does not queue answers at once.
     */
    default void admit(long now, int priority, long deadline, Answer answer) {
      answer.told(admit(now, priority), now);
    }

    /** When the strategy's next timer is due (a wait that runs out); MAX_VALUE for none. */
    default long nextTimer() {
      return Long.MAX_VALUE;
    }

    /** Runs the timers due at or before {@code now}, each at its own time. */
    default void runTimers(long now) {}

    /** The request admitted with {@code token} got its answer. */
    void end(Object token, long now, long rttNanos, boolean late);

    /** The limit now; -1 when there is none. */
    int limit();

    /** The CPU variant's host, before the run (what health signals read). */
    default void host(Host host) {}
  }

  /** Where a queued admission's answer goes. */
  interface Answer {
    /** {@code token} (null: refused) at {@code at}. */
    void told(Object token, long at);
  }

  /** One strategy's figures. */
  record Result(String name, double[] goodShare, double[] limit, double[] p99Ms, double degradedGoodput,
      double worstSecondAfterDrop, double worstSecondAfterBack, double steadyP99Ms,
      double degradedP50Ms, double degradedP99Ms, double degradedUnloadedP99Ms,
      double steadyRefused, double criticalServed, double settleAfterDrop,
      double settleAfterBack) {
    /** The criteria of the overload bar it misses. */
    EnumSet<Criterion> missed(Settings s) {
      EnumSet<Criterion> missed = EnumSet.noneOf(Criterion.class);
      if (degradedGoodput < 0.95) {
        missed.add(Criterion.GOODPUT);
      }
      if (Math.min(worstSecondAfterDrop, worstSecondAfterBack) < 0.90) {
        missed.add(Criterion.WORST_SECOND);
      }
      if (degradedP99Ms > 2 * degradedUnloadedP99Ms || steadyP99Ms > 2 * s.p99() * 1000) {
        missed.add(Criterion.P99);
      }
      if (steadyRefused >= 0.01) {
        missed.add(Criterion.REFUSED);
      }
      if (criticalServed < 0.999) {
        missed.add(Criterion.CRITICAL);
      }
      return missed;
    }

    /** Whether it meets the overload bar, and if not, why. */
    List<String> misses(Settings s) {
      List<String> why = new ArrayList<>();
      for (Criterion c : missed(s)) {
        why.add(switch (c) {
          case GOODPUT -> String.format(Locale.ROOT, "degraded goodput %.1f%% < 95%%",
              100 * degradedGoodput);
          case WORST_SECOND -> String.format(Locale.ROOT, "a second from 5 s after a change at"
              + " %.1f%% < 90%%", 100 * Math.min(worstSecondAfterDrop, worstSecondAfterBack));
          case P99 -> "p99 above 2x the unloaded p99";
          case REFUSED -> String.format(Locale.ROOT, "%.2f%% refused in the steady state",
              100 * steadyRefused);
          case CRITICAL -> String.format(Locale.ROOT, "critical served %.2f%% < 99.9%%",
              100 * criticalServed);
        });
      }
      return why;
    }
  }

  /** The criteria of the overload bar (docs/concurrency.md). */
  enum Criterion {
    /** Goodput over the degraded minute at least 95% of what the capacity allows. */
    GOODPUT,
    /** Every second from 5 s after a change at 90% or more. */
    WORST_SECOND,
    /** p99 latency of admitted requests within twice the unloaded p99. */
    P99,
    /** Under 1% refused in the healthy steady state. */
    REFUSED,
    /** At least 99.9% of critical requests served. */
    CRITICAL
  }

  // ------------------------------------------------------------------------------ strategies

  /** The strategies, each made fresh for a run. */
  static List<Supplier<Strategy>> strategies(Settings s) {
    List<Supplier<Strategy>> all = new ArrayList<>();
    all.add(() -> new Unlimited());
    all.add(() -> new ClientRateLimit(s));
    all.add(() -> new SluiceLimiter("fixed limit " + s.workers(),
        b -> b.limit(s.workers()), s.waits(), s.stalls()));
    all.add(() -> new SluiceLimiter("fixed " + s.workers() + " + reserve",
        b -> b.limit(s.workers()).share(Priority.NORMAL, 0.9).share(Priority.SHEDDABLE, 0.8),
        s.waits(), s.stalls()));
    all.add(() -> new SluiceLimiter("Sluice AIMD", b -> b.adaptive(() -> AimdLimit.builder()
        .max(s.max()).build()).share(Priority.NORMAL, 0.95).share(Priority.SHEDDABLE, 0.9),
        s.waits(), s.stalls()));
    all.add(() -> new SluiceLimiter("Sluice gradient", b -> b.adaptive(() -> GradientLimit
        .builder().max(s.max()).build()).share(Priority.NORMAL, 0.9)
        .share(Priority.SHEDDABLE, 0.8), s.waits(), s.stalls()));
    all.add(() -> new Netflix("Netflix Gradient2", Gradient2Limit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix Gradient2 max " + s.max(),
        Gradient2Limit.newBuilder().maxConcurrency(s.max()).build()));
    all.add(() -> new Netflix("Netflix Vegas", VegasLimit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix AIMD", AIMDLimit.newBuilder().build()));
    all.add(() -> new Netflix("Netflix AIMD max " + s.max(),
        AIMDLimit.newBuilder().maxLimit(s.max()).build()));
    if (s.variant() == Variant.CPU) {
      all.add(() -> new Health("health: cpu.pressure", "cpu.pressure", Host::pressure, 0.4,
          0.9, null));
      all.add(() -> new Health("health: container.cpu", "container.cpu", Host::cpu, 0.9, 1.0,
          null));
      all.add(() -> new Health("health + Sluice gradient", "cpu.pressure", Host::pressure, 0.4,
          0.9, new SluiceLimiter("", b -> b.adaptive(() -> GradientLimit.builder()
              .max(s.max()).build()).share(Priority.NORMAL, 0.9)
              .share(Priority.SHEDDABLE, 0.8), s.waits(), s.stalls())));
    }
    return all;
  }

  /**
   * The CPU variant's host: the cores the backend's calls may use now, the calls in service, and
   * the counters its signals read (CPU used by the calls and by the neighbour, and the time some
   * call waited for a core: Linux's CPU pressure).
   */
  static final class Host {
    final int cores;
    double available;
    int running;
    long at;
    double ownCoreNanos;
    double neighbourCoreNanos;
    double waitingNanos;

    Host(int cores) {
      this.cores = cores;
      this.available = cores;
    }

    /** The counters up to {@code now}, at the state since the last advance. */
    void advance(long now) {
      long dt = now - at;
      if (dt <= 0) {
        return;
      }
      ownCoreNanos += Math.min(running, available) * dt;
      neighbourCoreNanos += (cores - available) * dt;
      if (running > available) {
        waitingNanos += dt;
      }
      at = now;
    }

    /** Each call's speed now, a share of one core. */
    double speed() {
      return running <= available ? 1 : available / running;
    }

    /**
     * A signal: the CPU in use, a share of the cores (the calls' and the neighbour's), as {@code
     * Signals.containerCpu()} reads it when the neighbour runs in the backend's container (a
     * batch job beside it) or as the host's CPU.
     */
    static Gauge cpu(Host h) {
      return new Gauge(h, () -> h.ownCoreNanos + h.neighbourCoreNanos, h.cores);
    }

    /** A signal: the share of time some call waited for a core (PSI's {@code some}). */
    static Gauge pressure(Host h) {
      return new Gauge(h, () -> h.waitingNanos, 1);
    }
  }

  /** A counter of the host read as a rate between two readings, as Sluice's signals are. */
  static final class Gauge implements DoubleSupplier {
    private final Host host;
    private final DoubleSupplier counter;
    private final double units;
    private double last = Double.NaN;
    private long lastAt;

    Gauge(Host host, DoubleSupplier counter, double units) {
      this.host = host;
      this.counter = counter;
      this.units = units;
    }

    @Override
    public double getAsDouble() {
      double c = counter.getAsDouble();
      long now = host.at;
      double share = Double.isNaN(last) || now <= lastAt ? Double.NaN
          : Math.min(1, Math.max(0, (c - last) / ((now - lastAt) * units)));
      last = c;
      lastAt = now;
      return share;
    }
  }

  /**
   * Sluice's {@link HealthShedder} on one signal of the host (the guard on, every admitted call
   * ended), alone or in front of another strategy.
   */
  static final class Health implements Strategy {
    private final String name;
    private final String signalName;
    private final Function<Host, Gauge> signal;
    private final double start;
    private final double full;
    private final Strategy then;
    private final VirtualClock clock = new VirtualClock();
    private HealthShedder shedder;

    Health(String name, String signalName, Function<Host, Gauge> signal,
        double start, double full, Strategy then) {
      this.name = name;
      this.signalName = signalName;
      this.signal = signal;
      this.start = start;
      this.full = full;
      this.then = then;
    }

    @Override
    public void host(Host host) {
      Random random = new Random(17);
      shedder = HealthShedder.builder().clock(clock).random(random::nextDouble)
          .signal(HealthSignal.of(signalName, signal.apply(host)), start, full).build();
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public Object admit(long now, int priority) {
      clock.now = now;
      HealthShedder.Verdict v = shedder.admit(PRIORITIES[priority]);
      if (!v.admitted()) {
        return null;
      }
      Object inner = then == null ? (Object) "admitted" : then.admit(now, priority);
      if (inner == null) {
        v.end();
        return null;
      }
      return new Object[] {v, inner};
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {
      clock.now = now;
      Object[] t = (Object[]) token;
      ((HealthShedder.Verdict) t[0]).end();
      if (then != null) {
        then.end(t[1], now, rttNanos, late);
      }
    }

    @Override
    public int limit() {
      return then == null ? -1 : then.limit();
    }
  }

  static final class Unlimited implements Strategy {
    @Override
    public String name() {
      return "no limit";
    }

    @Override
    public Object admit(long now, int priority) {
      return true;
    }

    @Override
    public void end(Object token, long now, long rttNanos, boolean late) {}

    @Override
    public int limit() {
      return -1;
    }
  }

  /** The virtual clock Sluice's limiters run on; it knows the host's stalls as pauses. */
  static final class VirtualClock implements Clock {
    long now;
    long[] stalls = new long[0];

    @Override
    public long nanoTime() {
      return now;
    }

    @Override
    public long pausedNanos(long fromNanos, long toNanos) {
      long paused = 0;
      for (int i = 0; i < stalls.length; i += 2) {
        long s = Math.max(fromNanos, stalls[i]);
        long e = Math.min(toNanos, stalls[i + 1]);
        if (e > s) {
          paused += e - s;
        }
      }
      return paused;
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

  /** A scheduler on the virtual clock: its tasks run when the run's time reaches them. */
  static final class VirtualScheduler implements Scheduler {
    private record Task(long due, long seq, Runnable run) {}

    private final VirtualClock clock;
    private final PriorityQueue<Task> due = new PriorityQueue<>(
        (a, b) -> a.due != b.due ? Long.compare(a.due, b.due) : Long.compare(a.seq, b.seq));
    private long seq;

    VirtualScheduler(VirtualClock clock) {
      this.clock = clock;
    }

    @Override
    public void schedule(Runnable task, long delayNanos) {
      due.add(new Task(clock.now + Math.max(0, delayNanos), seq++, task));
    }

    long next() {
      return due.isEmpty() ? Long.MAX_VALUE : due.peek().due;
    }

    void runUntil(long now) {
      while (!due.isEmpty() && due.peek().due <= now) {
        Task t = due.poll();
        clock.now = t.due;
        t.run.run();
      }
    }
  }

  /** Sluice's in-memory concurrency limiter on the virtual clock. */
  static final class SluiceLimiter implements Strategy {
    private final String name;
    private final VirtualClock clock = new VirtualClock();
    private final VirtualScheduler scheduler = new VirtualScheduler(clock);
    private final ConcurrencyLimiter limiter;
    private final boolean wait;

    SluiceLimiter(String name, UnaryOperator<ConcurrencyLimiter.Builder> settings) {
      this(name, settings, false);
    }

    SluiceLimiter(String name, UnaryOperator<ConcurrencyLimiter.Builder> settings,
        boolean wait) {
      this(name, settings, wait, new long[0]);
    }

    SluiceLimiter(String name, UnaryOperator<ConcurrencyLimiter.Builder> settings,
        boolean wait, long[] stalls) {
      this.name = name;
      this.wait = wait;
      this.clock.stalls = stalls;
      this.limiter = settings.apply(ConcurrencyLimiter.builder().lease(Duration.ofDays(1))
          .maxWaiters(wait ? ConcurrencyLimiter.DEFAULT_MAX_WAITERS : 0).clock(clock)
          .scheduler(scheduler)).build();
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

    // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
    @SuppressWarnings("FutureReturnValueIgnored")
    @Override
    public void admit(long now, int priority, long deadline, Answer answer) {
      if (!wait) {
        answer.told(admit(now, priority), now);
        return;
      }
      clock.now = now;
      Duration useful = limiter.usefulWait("backend", Duration.ofNanos(deadline - now));
      limiter.acquireAsync("backend", 1, PRIORITIES[priority],
              useful.isNegative() ? Duration.ZERO : useful)
          .thenAccept(a -> answer.told(a.isAcquired() ? a.permit() : null, clock.now));
    }

    @Override
    public long nextTimer() {
      return scheduler.next();
    }

    @Override
    public void runTimers(long now) {
      scheduler.runUntil(now);
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
  static final class Request {
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

  record Event(long at, long seq, int kind, Request request) {}

  /**
   * The run's events in time order, ties in the order they were added (the first attempts
   * first, in their order). Four sorted sources are merged: the first attempts (their list is
   * sorted by arrival), the events added for the instant being run (an answer at once), the
   * events added in time order, and a heap for the others. One heap of hundreds of thousands of
   * events made most of a run's time.
   */
  static final class Events {
    private static final Comparator<Event> ORDER =
        (a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq);
    private final PriorityQueue<Event> heap = new PriorityQueue<>(ORDER);
    private final ArrayDeque<Event> inOrder = new ArrayDeque<>();
    /** Events at {@code now}, in the order added. */
    private final ArrayDeque<Event> current = new ArrayDeque<>();
    private final List<Request> firstAttempts;
    private int nextFirst;
    /** The next first attempt as an event, once asked for. */
    private Event first;
    private long seq;
    /** The instant of the event polled last. */
    private long now = Long.MIN_VALUE;

    /** Events whose first are {@code firstAttempts}, arrivals in time order. */
    Events(List<Request> firstAttempts) {
      for (int i = 1; i < firstAttempts.size(); i++) {
        if (firstAttempts.get(i).arrival < firstAttempts.get(i - 1).arrival) {
          throw new IllegalArgumentException("first attempts must be in time order, but number "
              + i + " arrives at " + firstAttempts.get(i).arrival + " ns, before "
              + firstAttempts.get(i - 1).arrival + " ns");
        }
      }
      this.firstAttempts = firstAttempts;
      this.seq = firstAttempts.size();
    }

    void add(long at, int kind, Request request) {
      Event e = new Event(at, seq++, kind, request);
      Event last = inOrder.peekLast();
      Event sameInstant = current.peekLast();
      if (at == now && (sameInstant == null || sameInstant.at == at)) {   // all of one instant
        current.addLast(e);
      } else if (last == null || at >= last.at) {   // a later seq too: it stays sorted
        inOrder.addLast(e);
      } else {
        heap.add(e);
      }
    }

    Event peek() {
      return earliest(earliest(nextFirst(), current.peekFirst()),
          earliest(inOrder.peekFirst(), heap.peek()));
    }

    Event poll() {
      Event e = peek();
      if (e == null) {
        return null;
      }
      // seqs are unique: they say which source the event came from
      Event c = current.peekFirst();
      Event d = inOrder.peekFirst();
      if (first != null && e.seq == first.seq) {
        first = null;
        nextFirst++;
      } else if (c != null && e.seq == c.seq) {
        current.pollFirst();
      } else if (d != null && e.seq == d.seq) {
        inOrder.pollFirst();
      } else {
        heap.poll();
      }
      now = e.at;
      return e;
    }

    private static Event earliest(Event a, Event b) {
      return a == null ? b : b == null || ORDER.compare(a, b) <= 0 ? a : b;
    }

    private Event nextFirst() {
      if (first == null && nextFirst < firstAttempts.size()) {
        Request r = firstAttempts.get(nextFirst);
        first = new Event(r.arrival, nextFirst, ARRIVAL, r);
      }
      return first;
    }
  }

  private static final int ARRIVAL = 0;
  private static final int DONE = 1;
  private static final int CAPACITY = 2;
  /** A request that waited was admitted (its token is set) or refused (its token is null). */
  private static final int ADMITTED = 3;

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

  /** A request reaches the strategy: counted, and its answer becomes an ADMITTED event. */
  private static void arrive(Tally tally, Strategy strategy, Events events, Request r, long at) {
    tally.arrived(r, at / 1e9);
    strategy.admit(at, r.priority, r.deadline, (token, when) -> {
      r.token = token;
      events.add(when, ADMITTED, r);
    });
  }

  /** What a run counts, whichever backend: per second and over the phases of the bar. */
  private static final class Tally {
    final Settings s;
    final int secs;
    final double[] good;
    final double[] offeredPerSecond;
    final double[] limitAt;
    final List<List<Double>> latencies = new ArrayList<>();
    long steadyOffered;
    long steadyRefused;
    long criticalOffered;
    long criticalGood;
    int nextSecond;

    /** The clients' retry budget, on the run's virtual time; null without one. */
    final RetryBudget budget;
    /** The run's virtual time, for the budget. */
    long now;

    Tally(Settings s) {
      this.s = s;
      this.budget = s.retries() && s.retryBudget() > 0 ? RetryBudget.builder()
          .ratio(s.retryBudget()).minPerSecond(10).window(Duration.ofSeconds(10))
          .clock(() -> now).build() : null;
      this.secs = (int) Math.ceil(s.seconds());
      this.good = new double[secs];
      this.offeredPerSecond = new double[secs];
      this.limitAt = new double[secs];
      for (int i = 0; i < secs; i++) {
        latencies.add(new ArrayList<>());
      }
    }

    /** The strategy's limit at each second's start up to {@code at}. */
    void limitsUntil(long at, Strategy strategy) {
      while (nextSecond < secs && at >= (long) nextSecond * 1_000_000_000L) {
        limitAt[nextSecond++] = strategy.limit();
      }
    }

    /** A request arrived at {@code t} seconds. */
    void arrived(Request r, double t) {
      if (r.first) {
        offeredPerSecond[(int) t]++;
        if (r.priority == 0) {
          criticalOffered++;
        }
        if (t >= 10 && t < s.dropAt()) {
          steadyOffered++;
        }
      }
    }

    /** A request was refused. */
    void refused(Request r) {
      if (r.first && r.arrival >= 10e9 && r.arrival < s.dropAt() * 1e9) {
        steadyRefused++;
      }
    }

    /** A request was answered at {@code at}; whether it was late. */
    boolean answered(Request r, long at) {
      int second = (int) (at / 1_000_000_000L);
      long latency = at - r.arrival;
      latencies.get(second).add(latency / 1e6);
      boolean late = at > r.deadline;
      if (!late) {
        good[second]++;
        if (budget != null) {
          now = at;
          budget.success();
        }
        if (r.priority == 0 && r.first) {
          criticalGood++;
        }
      }
      return late;
    }

    Result result(Strategy strategy) {
      limitsUntil(Long.MAX_VALUE, strategy);
      return OverloadSimulation.result(s, strategy.name(), good, offeredPerSecond, limitAt,
          latencies, steadyOffered == 0 ? 0 : (double) steadyRefused / steadyOffered,
          criticalOffered == 0 ? 1 : (double) criticalGood / criticalOffered);
    }
  }

  static Result run(Settings s, Strategy strategy, List<Request> firstAttempts) {
    if (s.variant() == Variant.CPU) {
      return runCpu(s, strategy, firstAttempts);
    }
    Tally tally = new Tally(s);
    Random random = new Random(s.seed() * 31 + 7);
    Events events = new Events(firstAttempts);
    events.add((long) (s.dropAt() * 1e9), CAPACITY, null);
    events.add((long) (s.backAt() * 1e9), CAPACITY, null);
    int workers = s.workers();
    int busy = 0;
    ArrayDeque<Request> queue = new ArrayDeque<>();
    long end = (long) (s.seconds() * 1e9);
    long[] stalls = s.stalls();
    int stall = 0;
    while (true) {
      Event next = events.peek();
      long timer = strategy.nextTimer();
      if (timer < end && (next == null || timer < next.at)) {
        strategy.runTimers(timer);   // a wait ran out: its answer is an event now
        continue;
      }
      if (next == null) {
        break;
      }
      Event e = events.poll();
      if (e.at >= end) {
        break;
      }
      while (stall < stalls.length && stalls[stall + 1] <= e.at) {
        stall += 2;
      }
      boolean stalled = stall < stalls.length && e.at >= stalls[stall];
      if (stalled && e.kind == ARRIVAL) {
        // the host is stalled: the request reaches the limiter when it runs again
        events.add(stalls[stall + 1], ARRIVAL, e.request);
        continue;
      }
      tally.limitsUntil(e.at, strategy);
      double t = e.at / 1e9;
      if (e.kind == CAPACITY) {
        workers = s.variant() == Variant.WORKERS_DIE && s.degraded(t) ? s.workers() / 2
            : s.workers();
        while (busy < workers && !queue.isEmpty()) {
          busy++;
          start(s, queue.poll(), e.at, events, stalls);
        }
        continue;
      }
      Request r = e.request;
      if (e.kind == ARRIVAL) {
        arrive(tally, strategy, events, r, e.at);
        continue;
      }
      if (e.kind == ADMITTED) {
        if (r.token == null) {
          tally.refused(r);
          retry(s, tally, r, e.at, random, events);
          continue;
        }
        if (busy < workers) {
          busy++;
          start(s, r, e.at, events, stalls);
        } else {
          queue.add(r);
        }
        continue;
      }
      // DONE: the worker takes the next request, and the answer reaches the strategy
      busy--;
      while (busy < workers && !queue.isEmpty()) {
        busy++;
        start(s, queue.poll(), e.at, events, stalls);
      }
      boolean late = e.at > r.deadline;
      strategy.end(r.token, e.at, e.at - r.arrival, late);
      if (tally.answered(r, e.at)) {
        retry(s, tally, r, r.deadline, random, events);
      }
    }
    return tally.result(strategy);
  }

  /** A call in service on the CPU variant's host: it ends when the attained service reaches this. */
  private record Running(double finishAt, long seq, Request request) {}

  /**
   * One strategy on the CPU variant: the calls in service share the cores the host has now
   * (processor sharing: each runs at the cores over the calls, at most one core), at most
   * {@link #THREADS_PER_CORE} a core; admitted calls beyond that wait for a thread in order.
   */
  static Result runCpu(Settings s, Strategy strategy, List<Request> firstAttempts) {
    Tally tally = new Tally(s);
    Random random = new Random(s.seed() * 31 + 7);
    Events events = new Events(firstAttempts);
    events.add((long) (s.dropAt() * 1e9), CAPACITY, null);
    events.add((long) (s.backAt() * 1e9), CAPACITY, null);
    Host host = new Host(s.workers());
    strategy.host(host);
    int threads = THREADS_PER_CORE * s.workers();
    ArrayDeque<Request> queue = new ArrayDeque<>();
    PriorityQueue<Running> running = new PriorityQueue<>((a, b) -> a.finishAt != b.finishAt
        ? Double.compare(a.finishAt, b.finishAt) : Long.compare(a.seq, b.seq));
    long seq = 0;
    double attained = 0;   // core-nanoseconds each call in service has had since the run began
    long end = (long) (s.seconds() * 1e9);
    while (true) {
      Event next = events.peek();
      long timer = strategy.nextTimer();
      long done = Long.MAX_VALUE;
      if (!running.isEmpty()) {
        double left = running.peek().finishAt - attained;
        done = host.at + (long) Math.ceil(Math.max(0, left) / host.speed());
      }
      long at = Math.min(Math.min(timer, done), next == null ? Long.MAX_VALUE : next.at);
      if (at >= end || at == Long.MAX_VALUE) {
        break;
      }
      attained += host.speed() * (at - host.at);
      host.advance(at);
      tally.limitsUntil(at, strategy);
      if (done == at) {
        Request r = running.poll().request;
        attained = Math.max(attained, 0);
        host.running--;
        while (host.running < threads && !queue.isEmpty()) {
          running.add(new Running(attained + queue.peek().service, seq++, queue.poll()));
          host.running++;
        }
        strategy.end(r.token, at, at - r.arrival, at > r.deadline);
        if (tally.answered(r, at)) {
          retry(s, tally, r, r.deadline, random, events);
        }
        continue;
      }
      if (timer == at) {
        strategy.runTimers(timer);
        continue;
      }
      Event e = events.poll();
      double t = e.at / 1e9;
      if (e.kind == CAPACITY) {
        host.available = s.degraded(t) ? s.workers() / 2.0 : s.workers();
        continue;
      }
      Request r = e.request;
      if (e.kind == ARRIVAL) {
        arrive(tally, strategy, events, r, e.at);
        continue;
      }
      // ADMITTED
      if (r.token == null) {
        tally.refused(r);
        retry(s, tally, r, e.at, random, events);
      } else if (host.running < threads) {
        running.add(new Running(attained + r.service, seq++, r));
        host.running++;
      } else {
        queue.add(r);
      }
    }
    return tally.result(strategy);
  }

  private static void start(Settings s, Request r, long now, Events events, long[] stalls) {
    long service = r.service;
    if (s.variant() == Variant.SLOWER && s.degraded(now / 1e9)) {
      service *= 2;
    }
    events.add(finish(now, service, stalls), DONE, r);
  }

  /**
   * When a service of {@code service} nanoseconds that starts at {@code start} ends: it makes no
   * progress while the host is stalled.
   */
  static long finish(long start, long service, long[] stalls) {
    long t = start;
    long left = service;
    for (int i = 0; i < stalls.length; i += 2) {
      if (stalls[i + 1] <= t) {
        continue;
      }
      if (stalls[i] <= t) {
        t = stalls[i + 1];
        continue;
      }
      if (t + left <= stalls[i]) {
        return t + left;
      }
      left -= stalls[i] - t;
      t = stalls[i + 1];
    }
    return t + left;
  }

  /**
   * In a retry storm, a refused or timed-out request comes again (up to 3 retries), if the
   * clients' retry budget allows it when there is one.
   */
  private static void retry(Settings s, Tally tally, Request r, long at, Random random,
      Events events) {
    if (!s.retries() || r.attempt >= 3) {
      return;
    }
    if (tally.budget != null) {
      tally.now = at;
      if (!tally.budget.tryRetry()) {
        return;
      }
    }
    long backoff = (long) ((0.05 + 0.1 * random.nextDouble()) * 1e9);
    long when = at + backoff;
    Request again = new Request(when, when + (r.deadline - r.arrival), r.priority,
        r.attempt + 1);
    again.service = r.service;
    events.add(when, ARRIVAL, again);
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

  /** The CPU variant's stock settings: 32 cores, 20 ms of CPU a call at the median, 70% load. */
  static Settings cpuDefaults(boolean retries) {
    return new Settings(32, 0.020, 0.060, 0.7, 0.2, 120, 30, 90, Variant.CPU, retries, 0.05, 0.3,
        1000, 1);
  }

  /** The stock settings of the experiment: 100 workers, 20 ms median, 70% load. */
  static Settings defaults(Variant variant, boolean retries) {
    return new Settings(100, 0.020, 0.060, 0.7, 0.2, 120, 30, 90, variant, retries, 0.05, 0.3,
        1000, 1);
  }
}

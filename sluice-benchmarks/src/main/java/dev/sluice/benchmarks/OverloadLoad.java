package dev.sluice.benchmarks;

import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.GradientLimit;
import dev.sluice.servlet.ConcurrencyRule;
import dev.sluice.servlet.SluiceFilter;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The overload experiment with real processes' parts: a real HTTP backend
 * (Jetty 12 on loopback) whose work runs on a pool of workers with log-normal service times, the
 * servlet filter with a concurrency limit in front of it, and an open-loop load generator (JDK
 * HttpClient, Poisson arrivals, each request with a deadline it sends as {@code grpc-timeout}
 * and gives up at). The backend's capacity is cut while it runs, by the same admin calls an
 * operator would make ({@code POST /admin?workers=N}, {@code POST /admin?slow=F}): half the
 * workers die, or each call takes twice as long, then it comes back.
 *
 * <p>Per strategy (no limit; a fixed limit set generously; a fixed limit sized by Little's law for
 * the healthy backend; Sluice's gradient limit) and per phase (healthy, degraded from 5 s after
 * the cut, restored from 5 s after the return) it prints: goodput (answers within their deadline
 * per second, as a share of the smaller of offered load and the backend's capacity of the moment),
 * p50 and p99 latency of admitted requests (a request the client gave up on counts at its
 * deadline), and the share refused (503).
 *
 * <p>{@code -Dvariant=cpu}: each call burns its service time of CPU (on 8 threads a core), and
 * from the cut a neighbour process (one busy loop a core, in a session of its own) takes half
 * the CPU; the strategies are no limit, a fixed limit of 2 a core, the gradient, Sluice's health
 * shedder on CPU pressure ({@code Signals.cpuPressure()}, band 0.4 to 0.9), and the shedder in
 * front of the gradient; the requests carry {@code X-Priority} (5% critical, 30% sheddable), and
 * each row gives the share of critical requests answered in time.
 *
 * <p>With {@code -Dstalls=EVERY_MS:LENGTH_MS} a helper process stops this whole JVM
 * ({@code kill -STOP}) about every EVERY_MS for LENGTH_MS, then lets it go on ({@code kill
 * -CONT}): a stall of the host, as a long GC pause or a starved CPU makes, that the backend, the
 * limiter and the load generator all live through. {@code -Dvariant=workers-die|slower} runs one
 * variant; {@code -Donly=gradient,fixed} runs the strategies whose names begin so. Each row
 * also gives the adaptive limit's mean over the phase (sampled every 100 ms).
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.OverloadLoad [healthySeconds degradedSeconds restoredSeconds]}.
 */
public final class OverloadLoad {
  private static final int WORKERS = 8;
  private static final double MEDIAN_MS = 20;
  private static final double SIGMA = 0.5;
  private static final double LOAD = 0.7;
  private static final Duration DEADLINE = Duration.ofMillis(250);

  private OverloadLoad() {}

  /** The mean of the log-normal service time, in ms, at slow factor 1. */
  static double meanServiceMillis() {
    return MEDIAN_MS * Math.exp(SIGMA * SIGMA / 2);
  }

  /** The CPU variant's worker threads per core. */
  static final int THREADS_PER_CORE = 8;

  /** Burns this thread's CPU for {@code millis} of its own CPU time (a CPU-bound call). */
  static void burn(double millis) {
    java.lang.management.ThreadMXBean bean =
        java.lang.management.ManagementFactory.getThreadMXBean();
    long until = bean.getCurrentThreadCpuTime() + (long) (millis * 1e6);
    long x = 0;
    while (bean.getCurrentThreadCpuTime() < until) {
      for (int i = 0; i < 10_000; i++) {
        x = x * 6364136223846793005L + 1442695040888963407L;
      }
    }
    if (x == 42) {
      System.out.print("");   // keeps the loop from being removed
    }
  }

  /** The backend: a worker pool whose size and speed the admin path changes while it runs. */
  static final class Backend implements AutoCloseable {
    final ThreadPoolExecutor workers;
    volatile double slow = 1;
    final boolean cpu;
    final Server server;
    final int port;

    Backend(ConcurrencyLimiter limiter, Duration maxWait) throws Exception {
      this(limiter, maxWait, null, false);
    }

    /**
     * With {@code cpu}, each call burns its service time of CPU on one of {@link
     * #THREADS_PER_CORE} threads a core (so it takes longer when the CPU is contended); with
     * {@code health}, the filter sheds by it first, at the priority of {@code X-Priority}.
     */
    Backend(ConcurrencyLimiter limiter, Duration maxWait, dev.sluice.health.HealthShedder health,
        boolean cpu) throws Exception {
      this.cpu = cpu;
      int size = cpu ? THREADS_PER_CORE * Runtime.getRuntime().availableProcessors() : WORKERS;
      this.workers = new ThreadPoolExecutor(size, size, 1, TimeUnit.MINUTES,
          new LinkedBlockingQueue<>());
      QueuedThreadPool threads = new QueuedThreadPool(400);
      threads.setName("backend");
      server = new Server(threads);
      ServerConnector connector = new ServerConnector(server);
      connector.setHost("127.0.0.1");
      connector.setPort(0);
      connector.setAcceptQueueSize(4096);
      server.addConnector(connector);
      ServletContextHandler context = new ServletContextHandler("/");
      if (limiter != null || health != null) {
        SluiceFilter.Builder b = SluiceFilter.builder();
        if (health != null) {
          b.health(health, req -> PRIORITY_OF.getOrDefault(req.getHeader("X-Priority"),
              dev.sluice.concurrency.Priority.NORMAL));
        }
        if (limiter != null) {
          b.rule(ConcurrencyRule.path("/work/**").limiter(limiter).global().maxWait(maxWait)
              .priority(req -> PRIORITY_OF.getOrDefault(req.getHeader("X-Priority"),
                  dev.sluice.concurrency.Priority.NORMAL)).build());
        }
        SluiceFilter filter = b.build();
        FilterHolder holder = new FilterHolder(filter);
        holder.setAsyncSupported(true);
        context.addFilter(holder, "/*", EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));
      }
      ServletHolder work = new ServletHolder(new HttpServlet() {
        @Override
        protected void service(HttpServletRequest req, HttpServletResponse resp) {
          AsyncContext ctx = req.startAsync();
          ctx.setTimeout(60_000);
          double factor = slow;
          workers.execute(() -> {
            double ms = MEDIAN_MS * Math.exp(SIGMA * random().nextGaussian()) * factor;
            if (cpu) {
              burn(ms);
            } else {
              LockSupport.parkNanos((long) (ms * 1e6));
            }
            try {
              ctx.getResponse().setContentType("text/plain");
              ctx.getResponse().getWriter().write("ok");
            } catch (IOException | RuntimeException gone) {
              // the client gave up: the work was done for nobody
            }
            ctx.complete();
          });
        }
      });
      work.setAsyncSupported(true);
      context.addServlet(work, "/work/*");
      context.addServlet(new ServletHolder(new HttpServlet() {
        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) {
          if (req.getParameter("workers") != null) {
            int n = Integer.parseInt(req.getParameter("workers"));
            if (n < workers.getCorePoolSize()) {
              workers.setCorePoolSize(n);
              workers.setMaximumPoolSize(n);
            } else {
              workers.setMaximumPoolSize(n);
              workers.setCorePoolSize(n);
            }
          }
          if (req.getParameter("slow") != null) {
            slow = Double.parseDouble(req.getParameter("slow"));
          }
          resp.setStatus(204);
        }
      }), "/admin");
      server.setHandler(context);
      server.start();
      port = connector.getLocalPort();
    }

    @Override
    public void close() {
      try {
        server.stop();
      } catch (Exception e) {
        throw new IllegalStateException("the backend did not stop", e);
      } finally {
        workers.shutdownNow();
      }
    }
  }

  private static final java.util.Map<String, dev.sluice.concurrency.Priority> PRIORITY_OF =
      java.util.Map.of("critical", dev.sluice.concurrency.Priority.CRITICAL,
          "sheddable", dev.sluice.concurrency.Priority.SHEDDABLE);

  private static final ThreadLocal<Random> RANDOM = ThreadLocal.withInitial(Random::new);

  static Random random() {
    return RANDOM.get();
  }

  /**
   * A limit in front of the backend (none: a null limiter), how long a request may wait, and the
   * adaptive limit it made last (null for none).
   */
  record Strategy(String name, Supplier<ConcurrencyLimiter> limiter, Duration maxWait,
      AtomicReference<AdaptiveLimit> adaptive,
      Supplier<dev.sluice.health.HealthShedder> health) {
    Strategy(String name, Supplier<ConcurrencyLimiter> limiter, Duration maxWait) {
      this(name, limiter, maxWait, new AtomicReference<>(), () -> null);
    }

    Strategy(String name, Supplier<ConcurrencyLimiter> limiter, Duration maxWait,
        AtomicReference<AdaptiveLimit> adaptive) {
      this(name, limiter, maxWait, adaptive, () -> null);
    }
  }

  /**
   * A neighbour that takes half the CPU: one busy loop a core in a session of its own (so that
   * the scheduler's autogroups share the CPU between it and this JVM half and half).
   */
  static Process neighbour() throws IOException {
    int cores = Runtime.getRuntime().availableProcessors();
    StringBuilder loops = new StringBuilder();
    for (int i = 0; i < cores; i++) {
      loops.append("(while :; do :; done) & ");
    }
    return new ProcessBuilder("setsid", "sh", "-c", loops + "wait").inheritIO().start();
  }

  /** Stops the neighbour and its loops. */
  static void stop(Process neighbour) throws InterruptedException {
    neighbour.descendants().forEach(ProcessHandle::destroyForcibly);
    neighbour.destroyForcibly();
    neighbour.waitFor();
  }

  /** Whether {@code -Donly=a,b} (names' beginnings) chooses the strategy; all without it. */
  static boolean chosen(String name) {
    String only = System.getProperty("only");
    if (only == null) {
      return true;
    }
    for (String prefix : only.split(",")) {
      if (name.equals(prefix.trim()) || name.startsWith(prefix.trim() + " ")) {
        return true;
      }
    }
    return false;
  }

  /** Stops this JVM about every {@code everyMs} for {@code lengthMs}, from another process. */
  static Process stalls(long everyMs, long lengthMs) throws IOException {
    long pid = ProcessHandle.current().pid();
    String script = String.format(Locale.ROOT, "while :; do sleep %.3f; kill -STOP %d;"
        + " sleep %.3f; kill -CONT %d; done", everyMs / 1000.0, pid, lengthMs / 1000.0, pid);
    return new ProcessBuilder("sh", "-c", script).inheritIO().start();
  }

  /** One request's fate. */
  record Outcome(long startNanos, long latencyNanos, int status, String priority) {}

  /** How each phase's figures are read. */
  record Phase(String name, double from, double to, double capacityPerSecond) {}

  /**
   * Runs one strategy on one variant; returns the rows to print.
   *
   * @param variant workers-die: half the workers die; slower: each call takes twice as long;
   *     cpu: each call burns its time of CPU, and a neighbour takes half the CPU
   */
  static List<String> run(Strategy strategy, String variant, int healthy, int degraded,
      int restored) throws Exception {
    boolean cpu = variant.equals("cpu");
    boolean halveWorkers = variant.equals("workers-die");
    double capacity = (cpu ? Runtime.getRuntime().availableProcessors() : WORKERS)
        / (meanServiceMillis() / 1000);
    Process neighbour = null;
    double rate = LOAD * capacity;
    ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
    List<long[]> limits = new ArrayList<>();
    Process stalls = null;
    ExecutorService clientThreads = Executors.newCachedThreadPool();
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
        .executor(clientThreads).build();
    try (Backend backend = new Backend(strategy.limiter().get(), strategy.maxWait(),
        strategy.health().get(), cpu)) {
      URI work = URI.create("http://127.0.0.1:" + backend.port + "/work/x");
      URI admin = URI.create("http://127.0.0.1:" + backend.port + "/admin?"
          + (halveWorkers ? "workers=" : "slow="));
      // warm up: a second at the same load, not counted
      drive(http, work, rate, 1, null);
      String stallSpec = System.getProperty("stalls");
      if (stallSpec != null) {
        String[] parts = stallSpec.split(":");
        stalls = stalls(Long.parseLong(parts[0]), Long.parseLong(parts[1]));
      }
      long start = System.nanoTime();
      long nextSample = start;
      Random arrivals = new Random(42);
      int total = healthy + degraded + restored;
      long cut = start + TimeUnit.SECONDS.toNanos(healthy);
      long back = cut + TimeUnit.SECONDS.toNanos(degraded);
      long end = start + TimeUnit.SECONDS.toNanos(total);
      boolean cutDone = false;
      boolean backDone = false;
      long next = start;
      while (next < end) {
        long now = System.nanoTime();
        AdaptiveLimit a = strategy.adaptive().get();
        if (a != null && now >= nextSample) {
          limits.add(new long[] {now, a.limit()});
          nextSample = now + TimeUnit.MILLISECONDS.toNanos(100);
        }
        if (!cutDone && now >= cut) {
          cutDone = true;
          if (cpu) {
            neighbour = neighbour();
          } else {
            call(http, URI.create(admin + (halveWorkers ? String.valueOf(WORKERS / 2) : "2")));
          }
        }
        if (!backDone && now >= back) {
          backDone = true;
          if (cpu) {
            stop(neighbour);
            neighbour = null;
          } else {
            call(http, URI.create(admin + (halveWorkers ? String.valueOf(WORKERS) : "1")));
          }
        }
        if (now < next) {
          LockSupport.parkNanos(next - now);
          continue;
        }
        send(http, work, next, outcomes);
        next += (long) (-Math.log(1 - arrivals.nextDouble()) / rate * 1e9);
      }
      if (stalls != null) {
        stalls.destroy();
        stalls.waitFor();
        stalls = null;
        new ProcessBuilder("kill", "-CONT", String.valueOf(ProcessHandle.current().pid()))
            .start().waitFor();
      }
      // every request ends within its deadline on the client
      Thread.sleep(DEADLINE.toMillis() + 500);
      double degradedCapacity = capacity / 2;
      List<Phase> phases = List.of(
          new Phase("healthy", 2, healthy, capacity),
          new Phase("degraded", healthy + 5, healthy + degraded, degradedCapacity),
          new Phase("restored", healthy + degraded + 5, total, capacity));
      List<String> rows = new ArrayList<>();
      for (Phase p : phases) {
        rows.add(row(strategy.name(), variant, p, outcomes, start, rate)
            + meanLimit(limits, start, p));
      }
      return rows;
    } finally {
      if (stalls != null) {
        stalls.destroy();
      }
      if (neighbour != null) {
        stop(neighbour);
      }
      clientThreads.shutdownNow();
    }
  }

  private static void drive(HttpClient http, URI work, double rate, int seconds,
      ConcurrentLinkedQueue<Outcome> outcomes) {
    long start = System.nanoTime();
    long end = start + TimeUnit.SECONDS.toNanos(seconds);
    long next = start;
    Random r = new Random(7);
    while (next < end) {
      long now = System.nanoTime();
      if (now < next) {
        LockSupport.parkNanos(next - now);
        continue;
      }
      send(http, work, next, outcomes);
      next += (long) (-Math.log(1 - r.nextDouble()) / rate * 1e9);
    }
  }

  private static void send(HttpClient http, URI work, long at,
      ConcurrentLinkedQueue<Outcome> outcomes) {
    double u = random().nextDouble();
    String priority = u < 0.05 ? "critical" : u < 0.35 ? "sheddable" : "normal";
    HttpRequest req = HttpRequest.newBuilder(work).timeout(DEADLINE)
        .header("grpc-timeout", (DEADLINE.toMillis() - 10) + "m")
        .header("X-Priority", priority).build();
    http.sendAsync(req, HttpResponse.BodyHandlers.discarding()).whenComplete((resp, failure) -> {
      if (outcomes != null) {
        long latency = System.nanoTime() - at;
        outcomes.add(new Outcome(at, latency, failure != null ? -1 : resp.statusCode(),
            priority));
      }
    });
  }

  private static void call(HttpClient http, URI uri) throws Exception {
    http.send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.discarding());
  }

  private static String row(String strategy, String variant, Phase p,
      ConcurrentLinkedQueue<Outcome> outcomes, long start, double rate) {
    long from = start + (long) (p.from() * 1e9);
    long to = start + (long) (p.to() * 1e9);
    long deadline = DEADLINE.toNanos();
    int sent = 0;
    int good = 0;
    int refused = 0;
    int late = 0;
    int critical = 0;
    int criticalGood = 0;
    List<Long> admitted = new ArrayList<>();
    for (Outcome o : outcomes) {
      if (o.startNanos() < from || o.startNanos() >= to) {
        continue;
      }
      sent++;
      boolean isCritical = "critical".equals(o.priority());
      if (isCritical) {
        critical++;
        if (o.status() == 200 && o.latencyNanos() <= deadline) {
          criticalGood++;
        }
      }
      if (o.status() == 503) {
        refused++;
        continue;
      }
      if (o.status() == 200 && o.latencyNanos() <= deadline) {
        good++;
      } else {
        late++;
      }
      // admitted: answered 200, or given up on by its client (counted at its deadline)
      admitted.add(o.status() == 200 ? Math.min(o.latencyNanos(), deadline) : deadline);
    }
    double seconds = p.to() - p.from();
    double servable = Math.min(rate, p.capacityPerSecond()) * seconds;
    long[] lat = admitted.stream().mapToLong(Long::longValue).sorted().toArray();
    return String.format(Locale.ROOT,
        "%-30s %-11s %-9s %6d %7.1f%% %7.1f %7.1f %7.1f%% %7.1f%% %8.1f%%",
        strategy, variant, p.name(), sent,
        100.0 * good / servable, percentile(lat, 0.50) / 1e6, percentile(lat, 0.99) / 1e6,
        sent == 0 ? 0 : 100.0 * refused / sent, sent == 0 ? 0 : 100.0 * late / sent,
        critical == 0 ? 100.0 : 100.0 * criticalGood / critical);
  }

  /** The adaptive limit's mean over the phase, as a column ("-" for none). */
  private static String meanLimit(List<long[]> limits, long start, Phase p) {
    long from = start + (long) (p.from() * 1e9);
    long to = start + (long) (p.to() * 1e9);
    double sum = 0;
    int n = 0;
    for (long[] l : limits) {
      if (l[0] >= from && l[0] < to) {
        sum += l[1];
        n++;
      }
    }
    return n == 0 ? String.format(Locale.ROOT, " %7s", "-")
        : String.format(Locale.ROOT, " %7.1f", sum / n);
  }

  private static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
  }

  public static void main(String[] args) throws Exception {
    int healthy = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    int degraded = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    int restored = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    double capacity = WORKERS / (meanServiceMillis() / 1000);
    int sized = 2 * WORKERS;
    if (!System.getProperty("variant", "both").equals("cpu")) {
      System.out.printf(Locale.ROOT, "backend: %d workers, log-normal service (median %.0f ms,"
          + " sigma %.1f, mean %.1f ms): %.0f requests/s; offered %.0f/s (%.0f%%), deadline %d ms;"
          + " %d s healthy, %d s degraded, %d s restored; %d cores%n", WORKERS, MEDIAN_MS, SIGMA,
          meanServiceMillis(), capacity, LOAD * capacity, LOAD * 100, DEADLINE.toMillis(), healthy,
          degraded, restored, Runtime.getRuntime().availableProcessors());
    }
    if (System.getProperty("stalls") != null) {
      System.out.printf(Locale.ROOT, "host stalls (kill -STOP of this JVM): %s ms%n",
          System.getProperty("stalls").replace(":", " ms every, "));
    }
    System.out.printf(Locale.ROOT, "%-30s %-11s %-9s %6s %8s %7s %7s %8s %8s %9s %7s%n",
        "strategy", "variant", "phase", "sent", "goodput", "p50 ms", "p99 ms", "refused", "late",
        "critical", "limit");
    AtomicReference<AdaptiveLimit> made = new AtomicReference<>();
    Supplier<ConcurrencyLimiter> gradient = () -> ConcurrencyLimiter.builder()
        .adaptive(() -> {
          GradientLimit g = GradientLimit.builder().max(1000).build();
          made.set(g);
          return g;
        }).build();
    List<Strategy> strategies = List.of(
        new Strategy("no limit", () -> null, Duration.ZERO),
        new Strategy("fixed 100 (generous)", () -> ConcurrencyLimiter.builder().limit(100)
            .build(), Duration.ZERO),
        new Strategy("fixed " + sized + " (Little's law)", () -> ConcurrencyLimiter.builder()
            .limit(sized).build(), Duration.ZERO),
        new Strategy("gradient", gradient, Duration.ZERO, made),
        new Strategy("gradient, wait to deadline", gradient, DEADLINE, made),
        new Strategy("gradient, wait, CoDel", () -> ConcurrencyLimiter.builder()
            .adaptive(() -> {
              GradientLimit g = GradientLimit.builder().max(1000).build();
              made.set(g);
              return g;
            })
            .codel(Duration.ofMillis(5), Duration.ofMillis(100)).build(), DEADLINE, made));
    String variant = System.getProperty("variant", "both");
    if (variant.equals("cpu")) {
      int cores = Runtime.getRuntime().availableProcessors();
      double full = cores / (meanServiceMillis() / 1000);
      System.out.printf(Locale.ROOT, "cpu: each call burns its log-normal service time of CPU"
          + " (median %.0f ms, mean %.1f ms) on %d threads (%d a core): %.0f calls/s at full CPU;"
          + " offered %.0f/s (%.0f%%), deadline %d ms; from the cut a neighbour (one busy loop a"
          + " core, its own session) takes half the CPU; %d s healthy, %d s degraded, %d s"
          + " restored; %d cores%n", MEDIAN_MS, meanServiceMillis(), THREADS_PER_CORE * cores,
          THREADS_PER_CORE, full, LOAD * full, LOAD * 100, DEADLINE.toMillis(), healthy,
          degraded, restored, cores);
      Supplier<dev.sluice.health.HealthShedder> health = () -> dev.sluice.health.HealthShedder
          .builder().signal(dev.sluice.health.Signals.cpuPressure(), 0.4, 0.9).build();
      List<Strategy> cpuStrategies = List.of(
          new Strategy("no limit", () -> null, Duration.ZERO),
          new Strategy("fixed " + 2 * cores + " (2 a core)", () -> ConcurrencyLimiter.builder()
              .limit(2 * cores).build(), Duration.ZERO),
          new Strategy("gradient", gradient, Duration.ZERO, made),
          new Strategy("health: cpu.pressure", () -> null, Duration.ZERO,
              new AtomicReference<>(), health),
          new Strategy("health + gradient", gradient, Duration.ZERO, made, health));
      for (Strategy s : cpuStrategies) {
        if (!chosen(s.name())) {
          continue;
        }
        made.set(null);
        for (String row : run(s, "cpu", healthy, degraded, restored)) {
          System.out.println(row);
        }
      }
      return;
    }
    for (boolean halve : new boolean[] {true, false}) {
      if (variant.equals(halve ? "slower" : "workers-die")) {
        continue;
      }
      for (Strategy s : strategies) {
        if (!chosen(s.name())) {
          continue;
        }
        made.set(null);
        for (String row : run(s, halve ? "workers-die" : "slower", healthy, degraded,
            restored)) {
          System.out.println(row);
        }
      }
    }
  }
}

package dev.sluice.cli;

import dev.sluice.Specs;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "overload", mixinStandardHelpOptions = true,
    description = {"The overload experiment (docs/concurrency.md): a backend of --workers workers"
        + " with log-normal service times, offered --load of its capacity by clients with"
        + " deadlines and priorities (5%% critical, 30%% sheddable); at 30 s its capacity halves"
        + " (half the workers die, or every service takes twice as long), at 90 s it comes back."
        + " Every strategy runs on the same arrivals in the same virtual time: no limit, a client"
        + " rate limit, a fixed concurrency limit, Sluice's AIMD and gradient limits, and"
        + " Netflix's Gradient2Limit, VegasLimit and AIMDLimit themselves. It prints per strategy"
        + " the goodput over the degraded period (answers within their deadline, as a share of"
        + " the smaller of offered load and capacity), the worst second from 5 s after each"
        + " change, p99 latency of admitted requests, refusals in the steady state (10 s to 30 s,"
        + " at --load) and the share of"
        + " critical requests served, and whether the strategy meets the overload bar (docs/concurrency.md). --variant cpu"
        + " runs a CPU-bound backend instead, beside a neighbour that takes half its cores, and"
        + " adds Sluice's health shedder (docs/health.md). Exit status"
        + " 0 whatever the figures; 2 for bad input.",
        "Example: sluice simulate overload --variant both --plot overload.svg"})
final class OverloadCommand implements Callable<Integer> {
  @Option(names = "--variant", defaultValue = "both",
      paramLabel = "workers-die|slower|both|cpu",
      description = "How capacity halves (default both: workers-die, then slower). cpu: a"
          + " CPU-bound backend of --workers cores (default 32) whose calls share them, at most 8"
          + " threads a core, and a neighbour that takes half the cores; adds Sluice's health"
          + " shedder (on CPU pressure, on the container's CPU, and in front of the gradient).")
  String variant;

  @Option(names = "--retries", description = "A retry storm: refused and timed-out requests"
      + " come again, up to 3 times, after 50 to 150 ms.")
  boolean retries;

  @Option(names = "--retry-budget", paramLabel = "RATIO", description = "With --retries, the"
      + " clients retry within a retry budget: at most RATIO retries per request answered in"
      + " time over 10 s, plus 10 a second (e.g. 0.1).")
  Double retryBudget;

  @Option(names = "--workers", description = "Backend workers (default 100); with --variant"
      + " cpu, its cores (default 32).")
  Integer workers;

  @Option(names = "--median", defaultValue = "20ms", paramLabel = "DURATION",
      description = "Median service time (default 20ms).")
  String median;

  @Option(names = "--p99", defaultValue = "60ms", paramLabel = "DURATION",
      description = "99th percentile service time (default 60ms).")
  String p99;

  @Option(names = "--load", defaultValue = "0.7",
      description = "Offered load as a share of the healthy capacity (default 0.7).")
  double load;

  @Option(names = "--deadline", defaultValue = "200ms", paramLabel = "DURATION",
      description = "Each request's deadline from its arrival (default 200ms).")
  String deadline;

  @Option(names = "--max", defaultValue = "1000",
      description = "The ceiling of the adaptive limits, Sluice's and Netflix's raised ones"
          + " (default 1000).")
  int max;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default 1).")
  long seed;

  @Option(names = "--stall-every", paramLabel = "DURATION", description = "Stalls of the host"
      + " that runs the limiter and the backend (a GC pause, a starved CPU), one about every"
      + " DURATION (give or take a quarter); with --stall. Default: none.")
  String stallEvery;

  @Option(names = "--stall", paramLabel = "DURATION", description = "How long each stall lasts:"
      + " arrivals in it reach the limiter when it ends, and every call in service takes that"
      + " much longer. With --stall-every.")
  String stall;

  @Option(names = "--wait", description = "Sluice's limiters let a request wait for a permit"
      + " (deadline-aware: up to its deadline less the mean hold time) instead of refusing it at"
      + " once; Netflix's limits and the others do not wait.")
  boolean wait;

  @Mixin
  OutputOptions out;

  @Mixin
  OutputOptions.PlotOptions plotting;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      List<OverloadSimulation.Settings> runs = settings();
      List<List<OverloadSimulation.Result>> results = new ArrayList<>();
      for (OverloadSimulation.Settings s : runs) {
        results.add(OverloadSimulation.run(s));
      }
      String text = switch (out.format()) {
        case "csv" -> csv(runs, results);
        case "json" -> json(runs, results);
        default -> table(runs, results);
      };
      out.write(spec, text);
      if (plotting.plot != null) {
        draw(runs, results);
      }
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice simulate overload: " + e.getMessage());
      return 2;
    }
  }

  List<OverloadSimulation.Settings> settings() {
    out.format();
    if (plotting.plot != null) {
      plotting.check();
    }
    List<OverloadSimulation.Variant> variants = switch (variant) {
      case "workers-die" -> List.of(OverloadSimulation.Variant.WORKERS_DIE);
      case "slower" -> List.of(OverloadSimulation.Variant.SLOWER);
      case "both" -> List.of(OverloadSimulation.Variant.WORKERS_DIE,
          OverloadSimulation.Variant.SLOWER);
      case "cpu" -> List.of(OverloadSimulation.Variant.CPU);
      default -> throw new InputException("--variant must be workers-die, slower, both or cpu but"
          + " was '" + variant + "'");
    };
    int workers = this.workers != null ? this.workers
        : variants.contains(OverloadSimulation.Variant.CPU) ? 32 : 100;
    if (workers < 2 || workers > 10_000) {
      throw new InputException("--workers must be between 2 and 10000 but was " + workers);
    }
    double medianSeconds = seconds("--median", median);
    double p99Seconds = seconds("--p99", p99);
    if (p99Seconds < medianSeconds) {
      throw new InputException("--p99 (" + p99 + ") must be at least --median (" + median + ")");
    }
    if (!(load > 0 && load <= 5)) {
      throw new InputException("--load must be above 0 and at most 5 but was " + Report.num(load));
    }
    if (max < 1 || max > 1_000_000) {
      throw new InputException("--max must be between 1 and 1000000 but was " + max);
    }
    double deadlineSeconds = seconds("--deadline", deadline);
    if ((stallEvery == null) != (stall == null)) {
      throw new InputException("--stall-every and --stall go together (a stall about every"
          + " --stall-every, each --stall long)");
    }
    double stallEverySeconds = stallEvery == null ? 0 : seconds("--stall-every", stallEvery);
    double stallSeconds = stall == null ? 0 : seconds("--stall", stall);
    if (stall != null && stallSeconds >= stallEverySeconds) {
      throw new InputException("--stall (" + stall + ") must be shorter than --stall-every ("
          + stallEvery + ")");
    }
    if (retryBudget != null && !retries) {
      throw new InputException("--retry-budget needs --retries (it limits the retries)");
    }
    if (retryBudget != null && !(retryBudget > 0 && retryBudget <= 10)) {
      throw new InputException("--retry-budget must be above 0 and at most 10 but was "
          + retryBudget);
    }
    List<OverloadSimulation.Settings> runs = new ArrayList<>();
    for (OverloadSimulation.Variant v : variants) {
      OverloadSimulation.Settings s = new OverloadSimulation.Settings(workers, medianSeconds,
          p99Seconds, load, deadlineSeconds, 120, 30, 90, v, retries, 0.05, 0.3, max, seed,
          stallEverySeconds, stallSeconds, wait, retryBudget == null ? 0 : retryBudget);
      if (s.offered() * s.seconds() > 5_000_000) {
        throw new InputException("--workers, --median and --load make "
            + Report.num(Math.round(s.offered())) + " arrivals a second: too many to simulate"
            + " (at most 5,000,000 in the 120 s run)");
      }
      runs.add(s);
    }
    return runs;
  }

  private static double seconds(String option, String text) {
    Duration d = Specs.parseDuration(text == null ? "" : text.trim());
    if (d == null || d.isZero() || d.isNegative() || d.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new InputException(option + " must be a duration above 0 and at most 1m, such as"
          + " 20ms or 1.5s, but was '" + text + "'");
    }
    return d.toNanos() / 1e9;
  }

  private static String name(OverloadSimulation.Settings s) {
    return (switch (s.variant()) {
      case WORKERS_DIE -> "half the workers die";
      case SLOWER -> "service time doubles";
      case CPU -> "a neighbour takes half the CPU";
    }) + (s.retries() ? ", retry storm" : "")
        + (s.retryBudget() > 0 ? " within a retry budget of " + Report.num(s.retryBudget())
            : "")
        + (s.stallEvery() > 0 ? ", host stalls of " + Report.num(s.stallLength() * 1000)
            + " ms about every " + Report.num(s.stallEvery()) + " s" : "")
        + (s.waits() ? ", waits up to the deadline" : "");
  }

  static String table(List<OverloadSimulation.Settings> runs,
      List<List<OverloadSimulation.Result>> results) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < runs.size(); i++) {
      OverloadSimulation.Settings s = runs.get(i);
      String backend = s.variant() == OverloadSimulation.Variant.CPU
          ? s.workers() + " cores (" + OverloadSimulation.THREADS_PER_CORE * s.workers()
              + " threads), CPU a call"
          : s.workers() + " workers, service";
      b.append(String.format(Locale.ROOT, "%s: %s p50 %s ms p99 %s ms, load %s,"
              + " deadline %s ms; capacity halves at 30 s, back at 90 s%n", name(s), backend,
          Report.num(s.median() * 1000), Report.num(s.p99() * 1000), Report.num(s.load()),
          Report.num(s.deadline() * 1000)));
      b.append(String.format(Locale.ROOT, "%-26s %9s %12s %12s %10s %12s %9s %9s  %s%n",
          "strategy", "goodput", "worst after", "worst after", "p99 steady", "p99 degraded",
          "refused", "critical", "the overload bar"));
      b.append(String.format(Locale.ROOT, "%-26s %9s %12s %12s %10s %12s %9s %9s%n", "",
          "degraded", "drop +5 s", "back +5 s", "ms", "ms (bound)", "steady", "served"));
      for (OverloadSimulation.Result r : results.get(i)) {
        List<String> misses = r.misses(s);
        b.append(String.format(Locale.ROOT,
            "%-26s %8.1f%% %11.1f%% %11.1f%% %10.1f %6.1f (%3.0f) %8.2f%% %8.2f%%  %s%n",
            r.name(), 100 * r.degradedGoodput(), 100 * r.worstSecondAfterDrop(),
            100 * r.worstSecondAfterBack(), r.steadyP99Ms(), r.degradedP99Ms(),
            2 * r.degradedUnloadedP99Ms(), 100 * r.steadyRefused(), 100 * r.criticalServed(),
            misses.isEmpty() ? "meets it" : "misses: " + String.join("; ", misses)));
      }
      b.append(String.format("%n"));
    }
    return b.toString();
  }

  static String csv(List<OverloadSimulation.Settings> runs,
      List<List<OverloadSimulation.Result>> results) {
    StringBuilder b = new StringBuilder("variant,retries,strategy,second,goodput_share,limit,"
        + "p99_ms\n");
    for (int i = 0; i < runs.size(); i++) {
      OverloadSimulation.Settings s = runs.get(i);
      for (OverloadSimulation.Result r : results.get(i)) {
        for (int t = 0; t < r.goodShare().length; t++) {
          b.append(String.format(Locale.ROOT, "%s,%s,\"%s\",%d,%.4f,%d,%.1f%n",
              s.variant().name().toLowerCase(Locale.ROOT), s.retries(), r.name(), t,
              r.goodShare()[t], (long) r.limit()[t], r.p99Ms()[t]));
        }
      }
    }
    return b.toString();
  }

  static String json(List<OverloadSimulation.Settings> runs,
      List<List<OverloadSimulation.Result>> results) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < runs.size(); i++) {
      OverloadSimulation.Settings s = runs.get(i);
      for (OverloadSimulation.Result r : results.get(i)) {
        if (b.length() > 1) {
          b.append(",");
        }
        b.append(String.format(Locale.ROOT, "%n  {\"variant\": \"%s\", \"retries\": %s,"
                + " \"retryBudget\": %s, \"strategy\": \"%s\", \"degradedGoodput\": %.4f, \"worstAfterDrop\": %.4f,"
                + " \"worstAfterBack\": %.4f, \"steadyP99Ms\": %.1f, \"degradedP99Ms\": %.1f,"
                + " \"steadyRefused\": %.5f, \"criticalServed\": %.5f, \"meetsBar\": %s}",
            s.variant().name().toLowerCase(Locale.ROOT), s.retries(), s.retryBudget(), r.name(),
            r.degradedGoodput(), r.worstSecondAfterDrop(), r.worstSecondAfterBack(),
            r.steadyP99Ms(), r.degradedP99Ms(), r.steadyRefused(), r.criticalServed(),
            r.misses(s).isEmpty()));
      }
    }
    return b.append(String.format("%n]%n")).toString();
  }

  /** The strategies drawn: the adaptive ones and the fixed limit. */
  private static final List<String> DRAWN = List.of("fixed limit", "Sluice gradient",
      "Sluice AIMD", "Netflix Gradient2", "Netflix Vegas", "Netflix AIMD",
      "health + Sluice gradient");
  private static final String[] COLORS = {"#7f7f7f", "#2ca02c", "#17becf", "#d62728",
      "#9467bd", "#ff7f0e", "#1f77b4"};

  private void draw(List<OverloadSimulation.Settings> runs,
      List<List<OverloadSimulation.Result>> results) throws IOException {
    int panelH = 170;
    int height = Plot.TOP + runs.size() * (2 * panelH + 3 * Plot.GAP) + Plot.BOTTOM;
    int width = plotting.width;
    Output.plot(plotting.plot, width, height, c -> {
      double plotW = width - Plot.LEFT - Plot.RIGHT;
      c.text(Plot.LEFT, 24, "Overload: the limit and the p99 latency of admitted requests, per"
          + " second", 15, "start", Plot.INK, true);
      for (int k = 0; k < DRAWN.size(); k++) {
        double x = Plot.LEFT + k * 160;
        c.line(x, 44, x + 18, 44, COLORS[k], 2.5, false, "legend");
        c.text(x + 22, 48, DRAWN.get(k), 11, "start", Plot.INK, false);
      }
      double top = Plot.TOP;
      for (int i = 0; i < runs.size(); i++) {
        OverloadSimulation.Settings s = runs.get(i);
        List<OverloadSimulation.Result> rs = results.get(i);
        double limitMax = 2.0 * s.workers();
        panel(c, top, panelH, plotW, s, name(s) + ": limit (the workers: dashed)", limitMax, rs,
            r -> r.limit(), "");
        double w = top + panelH - s.workers() / limitMax * panelH;
        c.line(Plot.LEFT, w, Plot.LEFT + plotW, w, Plot.INK, 1, true, "workers");
        double ptop = top + panelH + Plot.GAP;
        double latencyMax = s.deadline() * 1000;
        panel(c, ptop, panelH, plotW, s, name(s) + ": p99 latency, capped at the deadline",
            latencyMax, rs, r -> r.p99Ms(), " ms");
        top = ptop + panelH + 2 * Plot.GAP;
      }
    });
  }

  private static void panel(Canvas c, double top, int h, double plotW,
      OverloadSimulation.Settings s, String title, double yMax,
      List<OverloadSimulation.Result> rs,
      Function<OverloadSimulation.Result, double[]> series, String unit) {
    double bottom = top + h;
    c.text(Plot.LEFT, top - 6, title, 12, "start", Plot.INK, true);
    c.line(Plot.LEFT, bottom, Plot.LEFT + plotW, bottom, Plot.INK, 1, false, "axis");
    c.line(Plot.LEFT, top, Plot.LEFT, bottom, Plot.INK, 1, false, "axis");
    for (double t : Plot.niceTicks(0, s.seconds())) {
      double x = Plot.LEFT + t / s.seconds() * plotW;
      c.line(x, top, x, bottom, Plot.GRID, 1, false, "grid");
      c.text(x, bottom + 14, Report.num(t) + " s", 10, "middle", Plot.INK, false);
    }
    for (double v : Plot.niceTicks(0, yMax)) {
      double y = bottom - v / yMax * h;
      c.text(Plot.LEFT - 6, y + 3, Report.num(v) + unit, 10, "end", Plot.INK, false);
    }
    for (int k = 0; k < DRAWN.size(); k++) {
      for (OverloadSimulation.Result r : rs) {
        if (!r.name().startsWith(DRAWN.get(k))) {
          continue;
        }
        double[] v = series.apply(r);
        double[] xs = new double[v.length];
        double[] ys = new double[v.length];
        for (int t = 0; t < v.length; t++) {
          xs[t] = Plot.LEFT + (t + 0.5) / s.seconds() * plotW;
          ys[t] = bottom - Math.max(0, Math.min(yMax, v[t])) / yMax * h;
        }
        c.polyline(xs, ys, v.length, COLORS[k], 1.6, "series");
        break;
      }
    }
  }
}

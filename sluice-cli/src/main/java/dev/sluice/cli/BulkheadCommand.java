package dev.sluice.cli;

import dev.sluice.Specs;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "bulkhead", mixinStandardHelpOptions = true,
    description = {"Size a concurrency limit by Little's law (in flight = arrival rate x latency;"
        + " the limit is rate x p99 latency, rounded up) and run Poisson traffic through Sluice's"
        + " concurrency limiter on a virtual clock: with the latencies given (log-normal with that"
        + " median and 99th percentile), then with every latency --slowdown times longer, beside"
        + " what would be in flight with no limit.",
        "Example: sluice simulate bulkhead --rate 200 --p50 40ms --p99 80ms"})
final class BulkheadCommand implements Callable<Integer> {
  @Option(names = "--rate", required = true, paramLabel = "N",
      description = "Arrivals per second.")
  double rate;

  @Option(names = "--p50", required = true, paramLabel = "DURATION",
      description = "Median latency, such as 40ms.")
  String p50;

  @Option(names = "--p99", required = true, paramLabel = "DURATION",
      description = "99th percentile latency, such as 80ms (at least the median).")
  String p99;

  @Option(names = "--limit", defaultValue = "0", paramLabel = "N",
      description = "The permits to try instead of Little's law's (default: rate x p99).")
  int limit;

  @Option(names = "--seconds", defaultValue = "60", description = "Each phase's length (default 60).")
  double seconds;

  @Option(names = "--slowdown", defaultValue = "5",
      description = "How much slower the second phase's latencies are (default 5; 1: no second"
          + " phase).")
  double slowdown;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default 1).")
  long seed;

  @Mixin
  OutputOptions out;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      BulkheadSimulation.Settings s = settings();
      List<BulkheadSimulation.Phase> phases = BulkheadSimulation.run(s);
      String text = switch (out.format()) {
        case "json" -> json(s, phases);
        case "csv" -> csv(phases);
        default -> table(s, phases);
      };
      out.write(spec, text);
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice simulate bulkhead: " + e.getMessage());
      return 2;
    }
  }

  BulkheadSimulation.Settings settings() {
    out.format();
    if (!(rate > 0 && rate <= 100_000)) {
      throw new InputException("--rate must be above 0 and at most 100000 but was "
          + Report.num(rate));
    }
    double median = seconds("--p50", p50);
    double tail = seconds("--p99", p99);
    if (tail < median) {
      throw new InputException("--p99 (" + p99 + ") must be at least --p50 (" + p50 + ")");
    }
    if (limit < 0 || limit > 1_000_000) {
      throw new InputException("--limit must be from 1 to 1000000 (0: Little's law) but was "
          + limit);
    }
    if (!(seconds >= 1 && seconds <= 3600)) {
      throw new InputException("--seconds must be between 1 and 3600 but was "
          + Report.num(seconds));
    }
    if (!(slowdown >= 1 && slowdown <= 1000)) {
      throw new InputException("--slowdown must be between 1 and 1000 but was "
          + Report.num(slowdown));
    }
    if (rate * seconds > 20_000_000) {
      throw new InputException("--rate times --seconds is too large to simulate (at most"
          + " 20,000,000 arrivals a phase)");
    }
    return new BulkheadSimulation.Settings(rate, median, tail, limit, seconds, slowdown, seed);
  }

  private static double seconds(String option, String text) {
    Duration d = Specs.parseDuration(text == null ? "" : text.trim());
    if (d == null || d.isZero() || d.isNegative() || d.compareTo(Duration.ofHours(1)) > 0) {
      throw new InputException(option + " must be a duration above 0 and at most 1h, such as"
          + " 40ms or 1.5s, but was '" + text + "'");
    }
    return d.toNanos() / 1e9;
  }

  static String table(BulkheadSimulation.Settings s, List<BulkheadSimulation.Phase> phases) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "Bulkhead for %s/s at p50 %s ms, p99 %s ms%n",
        Report.num(s.rate()), ms(s.p50()), ms(s.p99())));
    b.append(String.format(Locale.ROOT, "limit: %d permits (%s; mean in flight %s/s x %s ms mean"
            + " latency = %.1f)%n%n", s.permits(), s.limit() > 0 ? "as asked"
            : "Little's law: rate x p99, rounded up", Report.num(s.rate()),
        ms(s.meanLatency()), s.rate() * s.meanLatency()));
    b.append(String.format(Locale.ROOT, "%-10s %9s %9s %9s %10s %14s %14s%n", "phase",
        "offered", "admitted", "refused", "admitted/s", "in flight", "unlimited"));
    b.append(String.format(Locale.ROOT, "%-10s %9s %9s %9s %10s %14s %14s%n", "", "", "", "", "",
        "mean / max", "mean / max"));
    for (BulkheadSimulation.Phase p : phases) {
      b.append(String.format(Locale.ROOT, "%-10s %9d %9d %9d %10.1f %8.1f / %-4d %8.1f / %-4d%n",
          p.name(), p.offered(), p.admitted(), p.refused(), p.admittedPerSecond(s.seconds()),
          p.meanInFlight(), p.maxInFlight(), p.unlimitedMeanInFlight(),
          p.unlimitedMaxInFlight()));
    }
    return b.toString();
  }

  static String json(BulkheadSimulation.Settings s, List<BulkheadSimulation.Phase> phases) {
    StringBuilder b = new StringBuilder("{\n");
    b.append(String.format(Locale.ROOT, "  \"rate\": %s, \"p50Ms\": %s, \"p99Ms\": %s,"
            + " \"meanLatencyMs\": %s, \"limit\": %d, \"seconds\": %s, \"seed\": %d,%n",
        Report.num(s.rate()), ms(s.p50()), ms(s.p99()), ms(s.meanLatency()), s.permits(),
        Report.num(s.seconds()), s.seed()));
    b.append("  \"phases\": [\n");
    for (int i = 0; i < phases.size(); i++) {
      BulkheadSimulation.Phase p = phases.get(i);
      b.append(String.format(Locale.ROOT, "    {\"name\": \"%s\", \"latencyFactor\": %s,"
              + " \"offered\": %d, \"admitted\": %d, \"refused\": %d, \"admittedPerSecond\": %.2f,"
              + " \"meanInFlight\": %.3f, \"maxInFlight\": %d, \"unlimitedMeanInFlight\": %.3f,"
              + " \"unlimitedMaxInFlight\": %d}%s%n", p.name(), Report.num(p.latencyFactor()),
          p.offered(), p.admitted(), p.refused(), p.admittedPerSecond(s.seconds()),
          p.meanInFlight(), p.maxInFlight(), p.unlimitedMeanInFlight(), p.unlimitedMaxInFlight(),
          i + 1 < phases.size() ? "," : ""));
    }
    return b.append("  ]\n}\n").toString();
  }

  static String csv(List<BulkheadSimulation.Phase> phases) {
    StringBuilder b = new StringBuilder("phase,offered,admitted,refused,mean_in_flight,"
        + "max_in_flight,unlimited_mean_in_flight,unlimited_max_in_flight\n");
    for (BulkheadSimulation.Phase p : phases) {
      b.append(String.format(Locale.ROOT, "%s,%d,%d,%d,%.3f,%d,%.3f,%d%n", p.name(), p.offered(),
          p.admitted(), p.refused(), p.meanInFlight(), p.maxInFlight(),
          p.unlimitedMeanInFlight(), p.unlimitedMaxInFlight()));
    }
    return b.toString();
  }

  private static String ms(double seconds) {
    return Report.num(Math.round(seconds * 1e5) / 100.0);
  }
}

package dev.sluice.cli;

import dev.sluice.concurrency.FairQueuing;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "tenants", mixinStandardHelpOptions = true,
    description = {"The tenants experiment (docs/concurrency.md, \"Fair queuing\"): a concurrency"
        + " limit of 20 permits in front of a backend of 20 workers (service log-normal, median"
        + " 20 ms, p99 60 ms), every tenant sending 95%% of its equal share of the capacity while"
        + " some flood at ten times that; every request waits up to 1 s for a permit. Two"
        + " scenarios: 100 tenants, one flooding (fair queuing over 256 queues, hands of 4), and"
        + " 10,000 tenants, 1%% flooding (16,384 queues, hands of 4, a memory of 30 s). Waiters"
        + " first in, first out (the default), last in, first out, Netflix's partitioned"
        + " limiter with a partition per tenant (no queue: it refuses at once, and admits a"
        + " tenant with nothing in flight even over the limit, so the backend queues the"
        + " excess), and fair queuing among tenants, each on the same arrivals on a virtual"
        + " clock, and once more with nobody flooding. Per strategy: the worst and the median"
        + " quiet tenant's share of its requests served (a quiet tenant's max-min fair share is"
        + " its whole demand), the quiet tenants' p99 wait for a permit beside the same without"
        + " the flood, the flooders' share served, the workers' use while there is work, and"
        + " the bar: every quiet tenant 90%% of its fair share, a p99 wait within 2x of the run"
        + " without the flood, 95%% busy. Exit status 0 whatever the figures; 2 for bad input.",
        "Example: sluice simulate tenants --scenario large --queues 4096 --hand 8"})
final class TenantsCommand implements Callable<Integer> {
  @Option(names = "--scenario", defaultValue = "both", paramLabel = "small|large|both",
      description = "small: 100 tenants, one flooding; large: 10,000 tenants, 100 flooding;"
          + " both (the default).")
  String scenario;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default 1).")
  long seed;

  @Option(names = "--seconds", defaultValue = "300",
      description = "Each run's length in seconds, the first 5 not counted (default 300).")
  double seconds;

  @Option(names = "--queues", paramLabel = "N",
      description = "Fair queuing's queues (default 256 small, 16384 large).")
  Integer queues;

  @Option(names = "--hand", paramLabel = "N",
      description = "Fair queuing's hand size (default 4).")
  Integer hand;

  @Option(names = "--memory", paramLabel = "SECONDS",
      description = "Fair queuing's memory of demand in seconds (default 10 small, 30 large).")
  Double memory;

  @Mixin
  OutputOptions out;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    try {
      List<TenantsSimulation.Settings> runs = settings();
      String format = out.format();
      if (format.equals("csv")) {
        throw new InputException("--format must be table or json for simulate tenants but was"
            + " 'csv'");
      }
      List<List<TenantsSimulation.Result>> results = new ArrayList<>();
      for (TenantsSimulation.Settings s : runs) {
        results.add(TenantsSimulation.run(s));
      }
      out.write(spec, format.equals("json") ? json(runs, results) : table(runs, results));
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice simulate tenants: " + e.getMessage());
      return 2;
    }
  }

  /** The scenarios asked for, with the options applied and checked. */
  List<TenantsSimulation.Settings> settings() throws InputException {
    if (!(seconds >= 10 && seconds <= 3_600)) {
      throw new InputException("--seconds must be between 10 and 3600 but was "
          + Report.num(seconds));
    }
    if (memory != null && !(memory >= 0.001 && memory <= 86_400)) {
      throw new InputException("--memory must be between 0.001 and 86400 seconds but was "
          + Report.num(memory));
    }
    List<TenantsSimulation.Settings> all = TenantsSimulation.defaults(seed, seconds);
    List<TenantsSimulation.Settings> chosen = switch (scenario) {
      case "small" -> List.of(all.get(0));
      case "large" -> List.of(all.get(1));
      case "both" -> all;
      default -> throw new InputException("--scenario must be small, large or both but was '"
          + scenario + "'");
    };
    List<TenantsSimulation.Settings> runs = new ArrayList<>();
    for (TenantsSimulation.Settings s : chosen) {
      FairQueuing f = s.fair();
      try {
        FairQueuing fair = FairQueuing.of(queues == null ? f.queues() : queues,
            hand == null ? f.handSize() : hand, f.queueLength());
        fair = fair.withMemory(memory == null ? f.memory()
            : Duration.ofNanos(Math.round(memory * 1e9)));
        runs.add(s.withFair(fair));
      } catch (IllegalArgumentException e) {
        throw new InputException("--" + e.getMessage().replace("handSize", "hand"));
      }
    }
    return runs;
  }

  static String table(List<TenantsSimulation.Settings> runs,
      List<List<TenantsSimulation.Result>> results) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < runs.size(); i++) {
      TenantsSimulation.Settings s = runs.get(i);
      FairQueuing f = s.fair();
      b.append(String.format(Locale.ROOT, "%,d tenants, %,d flooding at %sx; limit %d, capacity"
              + " %s requests/s, each tenant %s%% of its share; %s s%n", s.tenants(),
          s.flooders(), Report.num(s.flood()), s.limit(), Report.num(Math.round(s.capacity())),
          Report.num(100 * s.load()), Report.num(s.seconds())));
      long bytes = (long) f.queues() * TenantsSimulation.QUEUE_BYTES;
      b.append(String.format(Locale.ROOT, "fair queuing: %,d queues, hands of %d, memory %s s;"
              + " %s of queues whatever the tenants; tenants x hand / queues = %.1f%n",
          f.queues(), f.handSize(), Report.num(f.memory().toMillis() / 1000.0),
          bytes < 10_240 ? String.format(Locale.ROOT, "%,d B", bytes)
              : String.format(Locale.ROOT, "%,d KiB", bytes / 1024),
          (double) s.tenants() * f.handSize() / f.queues()));
      b.append(String.format(Locale.ROOT, "%-20s %11s %11s %19s %11s %7s  %s%n", "strategy",
          "worst quiet", "median", "quiet p99 wait ms", "flood", "busy", "the bar"));
      b.append(String.format(Locale.ROOT, "%-20s %11s %11s %19s %11s %7s%n", "", "served",
          "served", "(without flood)", "served", ""));
      for (TenantsSimulation.Result r : results.get(i)) {
        b.append(String.format(Locale.ROOT, "%-20s %10.1f%% %10.1f%% %9.1f (%7.1f) %10.1f%%"
                + " %6.1f%%  %s%n", r.strategy(), 100 * r.worstQuietShare(),
            100 * r.medianQuietShare(), r.quietP99WaitMs(), r.calmP99WaitMs(),
            100 * r.floodShare(), 100 * r.busy(), r.meetsBar() ? "meets it" : "misses it"));
      }
      b.append(String.format("%n"));
    }
    return b.toString();
  }

  static String json(List<TenantsSimulation.Settings> runs,
      List<List<TenantsSimulation.Result>> results) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < runs.size(); i++) {
      TenantsSimulation.Settings s = runs.get(i);
      for (TenantsSimulation.Result r : results.get(i)) {
        if (b.length() > 1) {
          b.append(",");
        }
        b.append(String.format(Locale.ROOT, "%n  {\"tenants\": %d, \"flooders\": %d,"
                + " \"queues\": %d, \"hand\": %d, \"memorySeconds\": %s, \"strategy\": \"%s\","
                + " \"worstQuietShare\": %.4f, \"medianQuietShare\": %.4f, \"quietP99WaitMs\":"
                + " %.1f, \"calmP99WaitMs\": %.1f, \"floodShare\": %.4f, \"busy\": %.4f,"
                + " \"meetsBar\": %s}", s.tenants(), s.flooders(), s.fair().queues(),
            s.fair().handSize(), Report.num(s.fair().memory().toMillis() / 1000.0),
            r.strategy(), r.worstQuietShare(), r.medianQuietShare(), r.quietP99WaitMs(),
            r.calmP99WaitMs(), r.floodShare(), r.busy(), r.meetsBar()));
      }
    }
    return b.append(String.format("%n]%n")).toString();
  }
}

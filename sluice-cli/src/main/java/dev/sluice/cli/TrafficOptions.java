package dev.sluice.cli;

import dev.sluice.Sluice;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Where the traffic comes from and what it is run against; shared by simulate and plot. */
final class TrafficOptions {
  @Parameters(index = "0", arity = "0..1", paramLabel = "SCENARIO",
      description = "A named scenario: seed000, burst, sustained, step, poisson, seed003.")
  String scenario;

  @Option(names = "--spec", paramLabel = "SPEC",
      description = "Traffic as segments, e.g. \"idle 5s, 200 in 100ms, 300/s for 2s poisson cost 2\".")
  String spec;

  @Option(names = "--csv", paramLabel = "FILE", description = "Arrivals from CSV lines: time_seconds[,cost].")
  Path csv;

  @Option(names = "--rate", paramLabel = "PER_SECOND", description = "Leak / refill rate per second (default: the scenario's, else 100).")
  Double rate;

  @Option(names = "--capacity", paramLabel = "UNITS", description = "Capacity / burst / window limit (default: the scenario's, else 200).")
  Double capacity;

  @Option(names = {"-a", "--algorithms"}, defaultValue = "all", paramLabel = "LIST",
      description = "all, or a comma list of leaky-meter, leaky-queue, token-bucket, gcra, fixed-window, sliding-window.")
  String algorithms;

  @Option(names = "--op", paramLabel = "try|fill",
      description = "What the meters do with each arrival: try (tryAcquire) or fill (fillUp); default try, fill for seed000.")
  String op;

  @Option(names = "--seed", defaultValue = "1", description = "Seed for poisson arrivals (default 1).")
  long seed;

  /** Everything a run needs, checked. */
  record Loaded(List<Arrival> arrivals, String source, double rate, double capacity,
      Simulation.Op op, List<Algo> algos) {}

  Loaded load() {
    int given = (scenario != null ? 1 : 0) + (spec != null ? 1 : 0) + (csv != null ? 1 : 0);
    if (given != 1) {
      throw new InputException(given == 0
          ? "give the traffic: a scenario name, --spec or --csv (try: sluice simulate burst)"
          : "give only one of a scenario name, --spec or --csv");
    }
    double r = 100;
    double c = 200;
    Simulation.Op o = Simulation.Op.TRY;
    List<Arrival> arrivals;
    String source;
    if (scenario != null) {
      Scenario s = Scenario.of(scenario);
      r = s.rate;
      c = s.capacity;
      o = s.op;
      arrivals = TrafficSpec.parse(s.spec, seed);
      source = s.id() + " (" + s.spec + ")";
    } else if (spec != null) {
      arrivals = TrafficSpec.parse(spec, seed);
      source = spec;
    } else {
      try (BufferedReader in = Files.newBufferedReader(csv, StandardCharsets.UTF_8)) {
        arrivals = CsvArrivals.read(in);
      } catch (NoSuchFileException e) {
        throw new InputException("no such file: " + csv);
      } catch (IOException e) {
        throw new InputException("cannot read " + csv + ": " + e.getMessage());
      }
      source = csv.toString();
    }
    if (rate != null) {
      r = positive("--rate", rate);
    }
    if (capacity != null) {
      c = positive("--capacity", capacity);
    }
    if (op != null) {
      switch (op.toLowerCase(Locale.ROOT)) {
        case "try": o = Simulation.Op.TRY; break;
        case "fill": o = Simulation.Op.FILL; break;
        default: throw new InputException("--op must be try or fill but was '" + op + "'");
      }
    }
    if (arrivals.isEmpty()) {
      throw new InputException("the traffic has no arrivals");
    }
    List<Algo> algos = Algo.parseList(algorithms);
    for (Algo a : algos) {
      try {
        Sluice.builder().limit(a.limit(r, c)).build();
      } catch (IllegalArgumentException e) {
        throw new InputException(a.id + ": " + e.getMessage());
      }
    }
    return new Loaded(arrivals, source, r, c, o, algos);
  }

  private static double positive(String name, double v) {
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new InputException(name + " must be positive and finite but was " + Report.num(v));
    }
    return v;
  }
}

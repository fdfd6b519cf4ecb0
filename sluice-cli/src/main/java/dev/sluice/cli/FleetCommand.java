package dev.sluice.cli;

import dev.sluice.LeaseSettings;
import dev.sluice.StoreFailure;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "fleet", mixinStandardHelpOptions = true,
    description = {"Simulate a fleet of gateways sharing one limit through a store, in virtual time:"
        + " central mode (one store call per decision) against fleet mode (leases), with an exact"
        + " central limiter as the oracle.",
        "The default scenario is seed 002's market open: 50 gateways, 18,000/s rising to"
            + " 285,000/s in 200 ms from 10,000 clients of 200/s burst 400 each, a backend limit"
            + " of 80,000/s, a store that serves 100,000 calls/s. Central mode asks the store for"
            + " both limits; fleet mode leases the backend's and keeps the clients' in memory."})
final class FleetCommand implements Callable<Integer> {
  @Option(names = "--mode", defaultValue = "both", paramLabel = "both|central|fleet",
      description = "Which modes to run (default both).")
  String mode;

  @Option(names = "--instances", defaultValue = "50", description = "Gateways (default 50).")
  int instances;

  @Option(names = "--seconds", defaultValue = "60", description = "Simulated seconds (default 60).")
  double seconds;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default 1).")
  long seed;

  @Option(names = "--base-rate", defaultValue = "18000", description = "Offered per second before the step (default 18000).")
  double baseRate;

  @Option(names = "--peak-rate", defaultValue = "285000", description = "Offered per second after the step (default 285000).")
  double peakRate;

  @Option(names = "--step-at", defaultValue = "5", description = "When the step starts, seconds (default 5).")
  double stepAt;

  @Option(names = "--ramp-ms", defaultValue = "200", description = "How long the step takes (default 200).")
  double rampMillis;

  @Option(names = "--limit", defaultValue = "80000", description = "The backend's limit per second (default 80000).")
  double limit;

  @Option(names = "--burst", defaultValue = "8000", description = "The limit's capacity (default 8000: 100 ms).")
  double burst;

  @Option(names = "--store-rate", defaultValue = "100000", description = "Calls per second the store serves (default 100000).")
  double storeRate;

  @Option(names = "--one-way-ms", defaultValue = "0.2", description = "Network delay each way (default 0.2).")
  double oneWayMillis;

  @Option(names = "--timeout-ms", defaultValue = "8", description = "The limiter's store call timeout (default 8).")
  double timeoutMillis;

  @Option(names = "--lifetime-ms", defaultValue = "200", description = "Lease lifetime (default 200).")
  long lifetimeMillis;

  @Option(names = "--share", defaultValue = "0.01", description = "Lease excess share of the limit (default 0.01).")
  double share;

  @Option(names = "--skew", paramLabel = "K:F", description = "K of the gateways get F times the traffic, e.g. 10:3 (default even).")
  String skew;

  @Option(names = "--clients", defaultValue = "10000", description = "Clients the requests come from, uniformly, each with its own limit (default 10000; 0: none).")
  int clients;

  @Option(names = "--client-rate", defaultValue = "200", description = "Each client's limit per second (default 200).")
  double clientRate;

  @Option(names = "--client-burst", defaultValue = "400", description = "Each client's burst (default 400).")
  double clientBurst;

  @Option(names = "--outage-at", defaultValue = "30", description = "When the store becomes unreachable, seconds (default 30; with --outage-seconds).")
  double outageAt;

  @Option(names = "--outage-seconds", defaultValue = "0", description = "How long the store stays unreachable (default 0: no outage).")
  double outageSeconds;

  @Option(names = "--central-policy", defaultValue = "fail-open", paramLabel = "fail-open|fail-closed",
      description = "Central mode's store failure policy (default fail-open, as in the incident).")
  String centralPolicy;

  @Option(names = "--fleet-policy", defaultValue = "fail-closed", paramLabel = "fail-closed|fail-open|local-share",
      description = "Fleet mode's store failure policy (default fail-closed).")
  String fleetPolicy;

  @Mixin
  OutputOptions out;

  @Mixin
  OutputOptions.PlotOptions plotting;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      List<FleetSimulation.Settings> runs = settings();
      List<FleetSimulation.Result> results = new ArrayList<>();
      for (FleetSimulation.Settings s : runs) {
        results.add(FleetSimulation.run(s));
      }
      String text = switch (out.format()) {
        case "csv" -> FleetReport.csv(results);
        case "json" -> FleetReport.json(results);
        default -> FleetReport.table(results);
      };
      out.write(spec, text);
      if (plotting.plot != null) {
        draw(results);
      }
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice fleet: " + e.getMessage());
      return 2;
    }
  }

  private void draw(List<FleetSimulation.Result> results) throws IOException {
    FleetSimulation.Settings s = results.get(0).settings;
    String title = String.format(Locale.ROOT, "%d gateways, %s/s rising to %s/s at %ss, limit %s/s,"
        + " store %s calls/s", s.instances(), Report.num(s.baseRate()), Report.num(s.peakRate()),
        Report.num(s.stepAt()), Report.num(s.limitRate()), Report.num(s.storeCallsPerSecond()));
    int height = FleetPlot.height(results.size());
    Output.plot(plotting.plot, plotting.width, height, c -> FleetPlot.draw(c, plotting.width, title, results));
  }

  List<FleetSimulation.Settings> settings() {
    if (!List.of("both", "central", "fleet").contains(mode)) {
      throw new InputException("--mode must be both, central or fleet but was '" + mode + "'");
    }
    out.format();
    if (instances < 1 || instances > 10_000) {
      throw new InputException("--instances must be between 1 and 10000 but was " + instances);
    }
    if (!(seconds > 0 && seconds <= 3600)) {
      throw new InputException("--seconds must be in (0, 3600] but was " + Report.num(seconds));
    }
    positive("--base-rate", baseRate, true);
    positive("--peak-rate", peakRate, true);
    positive("--limit", limit, false);
    positive("--burst", burst, false);
    positive("--store-rate", storeRate, false);
    positive("--timeout-ms", timeoutMillis, false);
    positive("--one-way-ms", oneWayMillis, true);
    positive("--step-at", stepAt, true);
    positive("--ramp-ms", rampMillis, true);
    positive("--outage-at", outageAt, true);
    positive("--client-rate", clientRate, false);
    positive("--client-burst", clientBurst, false);
    if (clients < 0 || clients > 1_000_000) {
      throw new InputException("--clients must be between 0 and 1000000 but was " + clients);
    }
    positive("--outage-seconds", outageSeconds, true);
    if (baseRate + peakRate > 5_000_000) {
      throw new InputException("--base-rate and --peak-rate may offer at most 5000000/s together");
    }
    plotting.check();
    int skewed = 0;
    double factor = 1;
    if (skew != null) {
      String[] kf = skew.split(":", -1);
      try {
        skewed = Integer.parseInt(kf[0]);
        factor = Double.parseDouble(kf[1]);
      } catch (RuntimeException e) {
        throw new InputException("--skew must be K:F, e.g. 10:3, but was '" + skew + "'");
      }
      if (kf.length != 2 || skewed < 0 || skewed > instances || !(factor > 0) || Double.isInfinite(factor)) {
        throw new InputException("--skew K:F needs 0 <= K <= --instances and F > 0 but was '" + skew + "'");
      }
    }
    LeaseSettings leases;
    try {
      leases = LeaseSettings.defaults().withLifetime(Duration.ofMillis(lifetimeMillis))
          .withExcessShare(share);
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    List<FleetSimulation.Settings> runs = new ArrayList<>();
    for (boolean leased : new boolean[] {false, true}) {
      if (mode.equals(leased ? "central" : "fleet")) {
        continue;
      }
      runs.add(new FleetSimulation.Settings(leased, instances, baseRate, peakRate, stepAt,
          rampMillis / 1000, seconds, limit, burst, storeRate, oneWayMillis, timeoutMillis,
          policy(leased ? "--fleet-policy" : "--central-policy", leased ? fleetPolicy : centralPolicy),
          leases, skewed, factor, seed, outageAt, outageSeconds, clients, clientRate, clientBurst));
    }
    return runs;
  }

  private static StoreFailure policy(String option, String value) {
    return switch (value) {
      case "fail-open" -> StoreFailure.FAIL_OPEN;
      case "fail-closed" -> StoreFailure.FAIL_CLOSED;
      case "local-share" -> StoreFailure.LOCAL_SHARE;
      default -> throw new InputException(option + " must be fail-open, fail-closed or local-share"
          + " but was '" + value + "'");
    };
  }

  private static void positive(String option, double value, boolean zeroAllowed) {
    if (Double.isNaN(value) || Double.isInfinite(value) || value < 0 || (!zeroAllowed && value == 0)) {
      throw new InputException(option + " must be " + (zeroAllowed ? "zero or more" : "positive")
          + " and finite but was " + Report.num(value));
    }
  }
}

package dev.sluice.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.LongConsumer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "simulate", mixinStandardHelpOptions = true, subcommands = {FairnessCommand.class,
    BulkheadCommand.class, TenantsCommand.class, OverloadCommand.class},
    description = {"Run traffic through every algorithm on a virtual clock and print what each"
        + " admits.", "Subcommands run the load-shedding experiments: overload (concurrency"
        + " limits and health shedding as capacity halves, with retry storms and retry budgets),"
        + " tenants (fair shares), fairness and bulkhead."})
final class SimulateCommand implements Callable<Integer> {
  @Mixin
  TrafficOptions traffic;

  @Mixin
  OutputOptions out;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      out.format();
      TrafficOptions.Loaded run = traffic.load();
      List<Simulation.Result> results = new ArrayList<>();
      for (Algo a : run.algos()) {
        results.add(Simulation.run(a, run.arrivals(), run.rate(), run.capacity(), run.op(), null,
            progress(spec, a, run.arrivals().size())));
      }
      String text = Report.format(out.format(), run.source(), run.rate(), run.capacity(), results);
      out.write(spec, text);
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice simulate: " + e.getMessage());
      return 2;
    }
  }

  /** Progress on a terminal for long runs; nothing when output is piped or in tests. */
  // System.console() is null when output is piped on the JDK 17 this targets (JDK 22 changed it)
  @SuppressWarnings("SystemConsoleNull")
  static LongConsumer progress(CommandSpec spec, Algo algo, int total) {
    if (total < 200_000 || System.console() == null) {
      return null;
    }
    PrintWriter err = spec.commandLine().getErr();
    return done -> {
      err.printf(Locale.ROOT, "\r%-15s %3d%%", algo.id, done * 100 / total);
      err.flush();
    };
  }
}

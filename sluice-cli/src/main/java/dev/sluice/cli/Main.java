package dev.sluice.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code sluice} command. */
@Command(name = "sluice", mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
    description = {"Exact rate limits and load shedding for the JVM: the leaky bucket and its"
        + " relatives (token bucket, GCRA, fixed and sliding windows), concurrency limits"
        + " (fixed, adaptive, with priorities and fair queuing), shedding by health, quotas.",
        "serve runs them as a service (HTTP, Envoy's gRPC API, a console); simulate, plot and"
        + " fleet show what each one does, on a virtual clock."},
    subcommands = {ServeCommand.class, SimulateCommand.class, PlotCommand.class, FleetCommand.class,
        CommandLine.HelpCommand.class})
public final class Main implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.setProperty("java.awt.headless", "true");
    Logs.configure(System.getenv("SLUICE_LOG_LEVEL"));
    System.exit(commandLine().execute(args));
  }

  static CommandLine commandLine() {
    return new CommandLine(new Main());
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}

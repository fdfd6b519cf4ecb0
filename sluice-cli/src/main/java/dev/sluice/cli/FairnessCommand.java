package dev.sluice.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "fairness", mixinStandardHelpOptions = true,
    description = {"Seed 002's fairness example in virtual time: clients share a service limit, one"
        + " alone, then two, then ten, each offering more than the whole service. A group (the"
        + " service as the parent; each client assured its share and borrowing idle capacity up"
        + " to a ceiling) side by side with plain per-client limits at the assured rate.",
        "Defaults: the service 1,000/s, each client assured 100/s with a 1,000/s ceiling,"
            + " clients offering 1,500/s each (Poisson), phases of 10 s, bursts of 0.1 s of each"
            + " rate. Rates are counted over each phase after its first second."})
final class FairnessCommand implements Callable<Integer> {
  @Option(names = "--total", defaultValue = "1000", description = "The service's rate per second (default 1000).")
  double total;

  @Option(names = "--assured", defaultValue = "100", description = "Each client's assured rate per second (default 100).")
  double assured;

  @Option(names = "--ceiling", defaultValue = "1000", description = "Each client's ceiling per second (default 1000).")
  double ceiling;

  @Option(names = "--offered", defaultValue = "1500", split = ",", paramLabel = "N,N,...",
      description = "What each client offers per second, A first; the last value holds for the"
          + " rest (default 1500).")
  double[] offered;

  @Option(names = "--phase-seconds", defaultValue = "10", description = "Length of each phase (default 10).")
  double phaseSeconds;

  @Option(names = "--burst-seconds", defaultValue = "0.1", description = "Each capacity as seconds of its rate (default 0.1).")
  double burstSeconds;

  @Option(names = "--reserve", paramLabel = "UNITS", description = "The parent's reserve (default: half its capacity).")
  Double reserve;

  @Option(names = "--clients", defaultValue = "1,2,10", split = ",", paramLabel = "N,N,...",
      description = "Clients in each phase (default 1,2,10; at most 12).")
  int[] clients;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default 1).")
  long seed;

  @Mixin
  OutputOptions out;

  @Mixin
  OutputOptions.PlotOptions plotting;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      FairnessSimulation.Result r = FairnessSimulation.run(settings());
      String text = switch (out.format()) {
        case "csv" -> csv(r);
        case "json" -> json(r);
        default -> table(r);
      };
      out.write(spec, text);
      if (plotting.plot != null) {
        draw(r);
      }
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice simulate fairness: " + e.getMessage());
      return 2;
    }
  }

  FairnessSimulation.Settings settings() {
    out.format();
    positive("--total", total);
    positive("--assured", assured);
    positive("--ceiling", ceiling);
    if (offered.length == 0 || offered.length > FairnessSimulation.NAMES.length) {
      throw new InputException("--offered lists 1 to " + FairnessSimulation.NAMES.length
          + " rates but listed " + offered.length);
    }
    double offeredMost = 0;
    for (double o : offered) {
      positive("--offered", o);
      offeredMost = Math.max(offeredMost, o);
    }
    positive("--burst-seconds", burstSeconds);
    if (assured > total) {
      throw new InputException("--assured " + Report.num(assured) + " exceeds --total "
          + Report.num(total) + ": one client alone would over-commit the service");
    }
    if (ceiling < assured || ceiling > total) {
      throw new InputException("--ceiling must be between --assured and --total but was "
          + Report.num(ceiling));
    }
    if (!(phaseSeconds >= 2 && phaseSeconds <= 600)) {
      throw new InputException("--phase-seconds must be between 2 and 600 but was "
          + Report.num(phaseSeconds));
    }
    if (offeredMost * phaseSeconds * 12 > 50_000_000) {
      throw new InputException("--offered times --phase-seconds is too large to simulate (at most"
          + " 50,000,000 requests per client-phase set)");
    }
    if (clients.length == 0 || clients.length > 6) {
      throw new InputException("--clients must list 1 to 6 phases but listed " + clients.length);
    }
    for (int c : clients) {
      if (c < 1 || c > FairnessSimulation.NAMES.length) {
        throw new InputException("--clients: each phase has 1 to "
            + FairnessSimulation.NAMES.length + " clients but one has " + c);
      }
    }
    double capacity = total * burstSeconds;
    if (reserve != null && !(reserve >= 0 && reserve < capacity)) {
      throw new InputException("--reserve must be at least 0 and below the service's capacity "
          + Report.num(capacity) + " but was " + Report.num(reserve));
    }
    plotting.check();
    try {
      FairnessSimulation.Settings s = new FairnessSimulation.Settings(total, assured, ceiling,
          offered.clone(), phaseSeconds, burstSeconds, reserve == null ? Double.NaN : reserve,
          clients.clone(), seed);
      s.group();   // the core's checks (representable rates and capacities)
      return s;
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
  }

  private static void positive(String name, double v) {
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new InputException(name + " must be positive and finite but was " + Report.num(v));
    }
  }

  private static String offeredText(FairnessSimulation.Settings s) {
    if (s.offered().length == 1) {
      return Report.num(s.offered()[0]) + "/s each";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.offered().length; i++) {
      b.append(i == 0 ? "" : ", ").append(FairnessSimulation.NAMES[i]).append(' ')
          .append(Report.num(s.offered()[i])).append("/s");
    }
    return b.toString();
  }

  private static String phaseName(int n) {
    return n == 1 ? "A alone" : n == 2 ? "A and B" : n + " clients";
  }

  static String table(FairnessSimulation.Result r) {
    FairnessSimulation.Settings s = r.settings;
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "sluice simulate fairness: the service %s/s (burst %s,"
            + " reserve %s); each client assured %s/s (burst %s), ceiling %s/s (burst %s);"
            + " clients offer %s (Poisson, seed %d); phases of %s s, rates over each"
            + " phase after its first second%n%n",
        Report.num(s.total()), Report.num(s.parentCapacity()), Report.num(r.reserve),
        Report.num(s.assured()), Report.num(s.assured() * s.burstSeconds()),
        Report.num(s.ceiling()), Report.num(s.ceiling() * s.burstSeconds()),
        offeredText(s), s.seed(), Report.num(s.phaseSeconds())));
    b.append(String.format(Locale.ROOT, "%-12s %-7s %12s %20s%n", "phase", "client",
        "group (/s)", "per-client limits (/s)"));
    for (int p = 0; p < s.clients().length; p++) {
      double sumGroup = 0;
      double sumPlain = 0;
      for (int c = 0; c < s.clients()[p]; c++) {
        double g = r.rate(r.group, c, p);
        double pl = r.rate(r.perClient, c, p);
        sumGroup += g;
        sumPlain += pl;
        b.append(String.format(Locale.ROOT, "%-12s %-7s %12.1f %20.1f%n",
            c == 0 ? phaseName(s.clients()[p]) : "", FairnessSimulation.NAMES[c], g, pl));
      }
      if (s.clients()[p] > 1) {
        b.append(String.format(Locale.ROOT, "%-12s %-7s %12.1f %20.1f%n", "", "total",
            sumGroup, sumPlain));
      }
    }
    long admitted = r.total(r.group);
    long borrowed = 0;
    for (long x : r.borrowed) {
      borrowed += x;
    }
    b.append(String.format(Locale.ROOT, "%nthe group admitted %d of %d offered (%d borrowed, %.1f%%);"
            + " plain per-client limits admitted %d%n", admitted, r.total(r.offered), borrowed,
        admitted == 0 ? 0 : 100.0 * borrowed / admitted, r.total(r.perClient)));
    b.append(String.format(Locale.ROOT, "most the group admitted beyond %s/s in any interval of"
            + " whole 100 ms bins: %s (the parent's capacity is %s: %s)%n", Report.num(s.total()),
        Report.num(Math.round(r.mostBeyondRate * 10) / 10.0), Report.num(s.parentCapacity()),
        r.mostBeyondRate <= s.parentCapacity() ? "within" : "EXCEEDED"));
    return b.toString();
  }

  static String csv(FairnessSimulation.Result r) {
    StringBuilder b = new StringBuilder("time_s,client,offered,group,group_rate_per_s,"
        + "per_client,per_client_rate_per_s\n");
    double perSecond = 1e9 / FairnessSimulation.BIN;
    for (int bin = 0; bin < r.bins; bin++) {
      for (int c = 0; c < r.group.length; c++) {
        b.append(String.format(Locale.ROOT, "%.1f,%s,%d,%d,%.0f,%d,%.0f%n",
            bin * FairnessSimulation.BIN / 1e9, FairnessSimulation.NAMES[c], r.offered[c][bin],
            r.group[c][bin], r.group[c][bin] * perSecond, r.perClient[c][bin],
            r.perClient[c][bin] * perSecond));
      }
    }
    return b.toString();
  }

  static String json(FairnessSimulation.Result r) {
    FairnessSimulation.Settings s = r.settings;
    StringBuilder b = new StringBuilder("{\n");
    b.append(String.format(Locale.ROOT, "  \"total\": %s, \"assured\": %s, \"ceiling\": %s,"
            + " \"offered\": %s, \"reserve\": %s, \"phaseSeconds\": %s, \"seed\": %d,%n",
        Report.num(s.total()), Report.num(s.assured()), Report.num(s.ceiling()),
        Arrays.toString(s.offered()), Report.num(r.reserve),
        Report.num(s.phaseSeconds()), s.seed()));
    b.append("  \"phases\": [\n");
    for (int p = 0; p < s.clients().length; p++) {
      b.append("    {\"clients\": ").append(s.clients()[p]).append(", \"group\": [");
      for (int c = 0; c < s.clients()[p]; c++) {
        b.append(c == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", r.rate(r.group, c, p)));
      }
      b.append("], \"perClient\": [");
      for (int c = 0; c < s.clients()[p]; c++) {
        b.append(c == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", r.rate(r.perClient, c, p)));
      }
      b.append("]}").append(p + 1 < s.clients().length ? ",\n" : "\n");
    }
    long borrowed = 0;
    for (long x : r.borrowed) {
      borrowed += x;
    }
    b.append(String.format(Locale.ROOT, "  ],%n  \"groupAdmitted\": %d, \"groupBorrowed\": %d,"
            + " \"perClientAdmitted\": %d, \"offered\": %d, \"mostBeyondRate\": %.1f,"
            + " \"parentCapacity\": %s%n}%n", r.total(r.group), borrowed, r.total(r.perClient),
        r.total(r.offered), r.mostBeyondRate, Report.num(s.parentCapacity())));
    return b.toString();
  }

  private void draw(FairnessSimulation.Result r) throws IOException {
    FairnessSimulation.Settings s = r.settings;
    String title = String.format(Locale.ROOT, "The service %s/s; each client assured %s/s, ceiling"
        + " %s/s; clients offer %s", Report.num(s.total()), Report.num(s.assured()),
        Report.num(s.ceiling()), offeredText(s));
    int height = FairnessPlot.height();
    Output.plot(plotting.plot, plotting.width, height, c -> FairnessPlot.draw(c, plotting.width, title, r));
  }

  /** Two panels, the group and plain per-client limits: each client's admitted rate. */
  static final class FairnessPlot {
    static final String[] COLORS = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
    static final int PANEL = 200;
    static final int GAP = 50;

    static int height() {
      return Plot.TOP + 2 * PANEL + GAP + Plot.BOTTOM;
    }

    static void draw(Canvas c, int width, String title, FairnessSimulation.Result r) {
      FairnessSimulation.Settings s = r.settings;
      double plotW = width - Plot.LEFT - Plot.RIGHT;
      c.text(Plot.LEFT, 24, title, 15, "start", Plot.INK, true);
      double at = Plot.LEFT;
      for (int k = 0; k < r.group.length; k++) {
        c.line(at, 42, at + 14, 42, COLORS[k], 2, false, "legend");
        c.text(at + 18, 46, FairnessSimulation.NAMES[k], 10, "start", Plot.INK, false);
        at += 36;
      }
      double max = s.total() * 1.15;
      double[] ticks = Plot.niceTicks(0, s.seconds());
      double top = Plot.TOP;
      List<String[]> panels = new ArrayList<>();
      panels.add(new String[] {"group", "group: assured " + Report.num(s.assured())
          + "/s each, borrowing the service's idle capacity"});
      panels.add(new String[] {"per-client", "plain per-client limits of "
          + Report.num(s.assured()) + "/s"});
      for (String[] panel : panels) {
        long[][] series = panel[0].equals("group") ? r.group : r.perClient;
        double bottom = top + PANEL;
        c.group("panel-" + panel[0]);
        for (double t : ticks) {
          double x = Plot.LEFT + t / s.seconds() * plotW;
          c.line(x, top, x, bottom, Plot.GRID, 1, false, "grid");
        }
        c.line(Plot.LEFT, bottom, Plot.LEFT + plotW, bottom, Plot.INK, 1, false, "axis");
        c.line(Plot.LEFT, top, Plot.LEFT, bottom, Plot.INK, 1, false, "axis");
        c.text(Plot.LEFT, top - 6, panel[1], 12, "start", Plot.INK, true);
        for (int k = 0; k <= 2; k++) {
          double v = max * k / 2;
          c.text(Plot.LEFT - 6, bottom - v / max * PANEL + 4,
              Report.num(Math.round(v)) + (k == 2 ? "/s" : ""), 10, "end", Plot.INK, false);
        }
        double totalY = bottom - s.total() / max * PANEL;
        c.line(Plot.LEFT, totalY, Plot.LEFT + plotW, totalY, Plot.CAPACITY, 1.2, true, "limit");
        double assuredY = bottom - s.assured() / max * PANEL;
        c.line(Plot.LEFT, assuredY, Plot.LEFT + plotW, assuredY, Plot.INK, 0.8, true, "assured");
        double perSecond = 1e9 / FairnessSimulation.BIN;
        for (int k = 0; k < series.length; k++) {
          double[] xs = new double[r.bins];
          double[] ys = new double[r.bins];
          for (int b = 0; b < r.bins; b++) {
            xs[b] = Plot.LEFT + (b + 0.5) / r.bins * plotW;
            ys[b] = bottom - Math.min(series[k][b] * perSecond, max) / max * PANEL;
          }
          c.polyline(xs, ys, r.bins, COLORS[k], 1.3, "client-" + FairnessSimulation.NAMES[k]);
        }
        c.endGroup();
        top = bottom + GAP;
      }
      double axisY = top - GAP;
      for (double t : ticks) {
        double x = Plot.LEFT + t / s.seconds() * plotW;
        c.text(x, axisY + 18, Report.num(Math.round(t * 1000) / 1000.0), 10, "middle", Plot.INK,
            false);
      }
      c.text(Plot.LEFT + plotW / 2, axisY + 36, "time (s)", 12, "middle", Plot.INK, false);
    }
  }
}

package dev.sluice.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import javax.imageio.ImageIO;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "plot", mixinStandardHelpOptions = true,
    description = "Draw the same run as SVG (or PNG): each bucket's level over time, the capacity,"
        + " arrivals admitted / rejected / delayed, and the queue's output.")
final class PlotCommand implements Callable<Integer> {
  @Mixin
  TrafficOptions traffic;

  @Option(names = {"-o", "--output"}, defaultValue = "sluice-plot.svg", paramLabel = "FILE",
      description = "Where to write; a name ending in .png writes PNG (default sluice-plot.svg).")
  Path output;

  @Option(names = "--png", description = "Also write a PNG beside the SVG.")
  boolean png;

  @Option(names = "--width", defaultValue = "960", description = "Width in pixels (default 960).")
  int width;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    try {
      if (width < 400 || width > 10_000) {
        throw new InputException("--width must be between 400 and 10000 but was " + width);
      }
      TrafficOptions.Loaded run = traffic.load();
      List<Plot.Panel> panels = panels(run, width);
      String title = String.format(Locale.ROOT, "%s — rate %s/s, capacity %s", run.source(),
          Report.num(run.rate()), Report.num(run.capacity()));
      int height = Plot.height(panels.size());
      String name = output.getFileName().toString().toLowerCase(Locale.ROOT);
      if (name.endsWith(".png")) {
        writePng(output, title, run, panels, height);
      } else {
        Canvas.Svg svg = new Canvas.Svg(width, height);
        Plot.draw(svg, width, title, run.capacity(), panels, run.op() == Simulation.Op.FILL);
        String text = svg.finish();
        Output.atomically(output, o -> o.write(text.getBytes(StandardCharsets.UTF_8)));
        if (png) {
          String base = output.toString().replaceFirst("(?i)\\.svg$", "");
          Path pngPath = Path.of(base + ".png");
          writePng(pngPath, title, run, panels, height);
          spec.commandLine().getOut().println("wrote " + output + " and " + pngPath);
          return 0;
        }
      }
      spec.commandLine().getOut().println("wrote " + output);
      return 0;
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice plot: " + e.getMessage());
      return 2;
    }
  }

  private void writePng(Path path, String title, TrafficOptions.Loaded run, List<Plot.Panel> panels,
      int height) throws IOException {
    Canvas.Png png = new Canvas.Png(width, height);
    Plot.draw(png, width, title, run.capacity(), panels, run.op() == Simulation.Op.FILL);
    Output.atomically(path, o -> ImageIO.write(png.image, "png", o));
  }

  /** Runs every algorithm with a trace over a time range that shows the whole story. */
  static List<Plot.Panel> panels(TrafficOptions.Loaded run, int width) {
    List<Arrival> arrivals = run.arrivals();
    long first = arrivals.get(0).nanos();
    long last = arrivals.get(arrivals.size() - 1).nanos();
    long drain = (long) Math.min(1e15, run.capacity() / run.rate() * 1e9);
    long end = last;
    for (Algo a : run.algos()) {
      // a first pass finds the last departure of the queue
      Simulation.Trace probe = new Simulation.Trace(first, last, 1);
      Simulation.run(a, arrivals, run.rate(), run.capacity(), run.op(), probe, null);
      for (long[] e : probe.events) {
        end = Math.max(end, e[2]);
      }
    }
    long to = end + drain;
    long span = to - first;
    long from = first <= span ? 0 : first - span / 20;
    List<Plot.Panel> panels = new ArrayList<>();
    for (Algo a : run.algos()) {
      Simulation.Trace trace = new Simulation.Trace(from, to, width * 2);
      Simulation.Result r = Simulation.run(a, arrivals, run.rate(), run.capacity(), run.op(), trace, null);
      panels.add(new Plot.Panel(r, trace));
    }
    return panels;
  }
}

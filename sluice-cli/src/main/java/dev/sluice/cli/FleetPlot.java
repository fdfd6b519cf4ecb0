package dev.sluice.cli;

import java.util.List;
import java.util.Locale;

/**
 * The plot of a fleet simulation: per mode, one panel of rates (offered, admitted, the oracle,
 * the limit) and one of the store's p99 latency, per 100 ms.
 */
final class FleetPlot {
  static final String OFFERED = "#7f7f7f";
  static final String ADMITTED = "#2ca02c";
  static final String ORACLE = "#1f77b4";
  static final String LIMIT = "#d62728";
  static final String LATENCY = "#ff7f0e";
  static final int RATES = 190;
  static final int LATENCIES = 90;
  static final int GAP = 46;

  private FleetPlot() {}

  static int height(int modes) {
    return Plot.TOP + modes * (RATES + LATENCIES + 2 * GAP) + Plot.BOTTOM - GAP;
  }

  static void draw(Canvas c, int width, String title, List<FleetSimulation.Result> results) {
    double plotW = width - Plot.LEFT - Plot.RIGHT;
    c.text(Plot.LEFT, 24, title, 15, "start", Plot.INK, true);
    legend(c, Plot.LEFT, 46);
    FleetSimulation.Settings s = results.get(0).settings;
    int buckets = results.get(0).buckets;
    double perSecond = 1e9 / FleetSimulation.BUCKET;
    double rateMax = Math.max(s.peakRate(), s.limitRate()) * 1.1;
    double latencyMax = s.timeoutMillis();
    double[] ticks = Plot.niceTicks(0, s.seconds());
    double top = Plot.TOP;
    for (FleetSimulation.Result r : results) {
      c.group("panel-" + r.mode());
      double bottom = top + RATES;
      frame(c, top, bottom, plotW, ticks, s.seconds());
      c.text(Plot.LEFT, top - 6, String.format(Locale.ROOT,
          "%s — admitted %s of %s offered (oracle %s)", r.mode(),
          Report.num(FleetSimulation.Result.sum(r.admitted, 0, buckets)),
          Report.num(FleetSimulation.Result.sum(r.offered, 0, buckets)),
          Report.num(FleetSimulation.Result.sum(r.oracle, 0, buckets))), 12, "start", Plot.INK, true);
      yLabels(c, top, bottom, rateMax, "/s");
      double limitY = bottom - s.limitRate() / rateMax * RATES;
      c.line(Plot.LEFT, limitY, Plot.LEFT + plotW, limitY, LIMIT, 1.2, true, "limit");
      c.text(Plot.LEFT + plotW, limitY - 3, "limit " + Report.num(s.limitRate()) + "/s", 10, "end",
          LIMIT, false);
      series(c, r.offered, perSecond, rateMax, top, bottom, plotW, OFFERED, "offered");
      series(c, r.oracle, perSecond, rateMax, top, bottom, plotW, ORACLE, "oracle");
      series(c, r.admitted, perSecond, rateMax, top, bottom, plotW, ADMITTED, "admitted");
      double ltop = bottom + GAP / 2.0;
      double lbottom = ltop + LATENCIES;
      frame(c, ltop, lbottom, plotW, ticks, s.seconds());
      yLabels(c, ltop, lbottom, latencyMax, " ms");
      c.text(Plot.LEFT + 4, ltop + 10, "store call p99 (capped at the " + Report.num(s.timeoutMillis())
          + " ms timeout)", 10, "start", LATENCY, false);
      double[] p99 = new double[buckets];
      for (int i = 0; i < buckets; i++) {
        double q = r.storeLatency[i].quantileMillis(0.99);
        p99[i] = Double.isNaN(q) ? 0 : Math.min(q, latencyMax);
      }
      double[] xs = new double[buckets];
      double[] ys = new double[buckets];
      for (int i = 0; i < buckets; i++) {
        xs[i] = Plot.LEFT + (i + 0.5) / buckets * plotW;
        ys[i] = lbottom - p99[i] / latencyMax * LATENCIES;
      }
      c.polyline(xs, ys, buckets, LATENCY, 1.4, "latency");
      c.endGroup();
      top = lbottom + GAP * 1.5;
    }
    double axisY = top - GAP * 1.5;
    for (double t : ticks) {
      double x = Plot.LEFT + t / s.seconds() * plotW;
      c.text(x, axisY + 18, Report.num(Math.round(t * 1000) / 1000.0), 10, "middle", Plot.INK, false);
    }
    c.text(Plot.LEFT + plotW / 2, axisY + 36, "time (s)", 12, "middle", Plot.INK, false);
  }

  private static void frame(Canvas c, double top, double bottom, double plotW, double[] ticks,
      double seconds) {
    for (double t : ticks) {
      double x = Plot.LEFT + t / seconds * plotW;
      c.line(x, top, x, bottom, Plot.GRID, 1, false, "grid");
    }
    c.line(Plot.LEFT, bottom, Plot.LEFT + plotW, bottom, Plot.INK, 1, false, "axis");
    c.line(Plot.LEFT, top, Plot.LEFT, bottom, Plot.INK, 1, false, "axis");
  }

  private static void yLabels(Canvas c, double top, double bottom, double max, String unit) {
    for (int k = 0; k <= 2; k++) {
      double v = max * k / 2;
      double y = bottom - v / max * (bottom - top);
      c.text(Plot.LEFT - 6, y + 4, Report.num(Math.round(v)) + (k == 2 ? unit : ""), 10, "end",
          Plot.INK, false);
    }
  }

  private static void series(Canvas c, long[] counts, double perSecond, double max, double top,
      double bottom, double plotW, String color, String cssClass) {
    int n = counts.length;
    double[] xs = new double[n];
    double[] ys = new double[n];
    for (int i = 0; i < n; i++) {
      xs[i] = Plot.LEFT + (i + 0.5) / n * plotW;
      ys[i] = bottom - Math.min(counts[i] * perSecond, max) / max * (bottom - top);
    }
    c.polyline(xs, ys, n, color, 1.5, cssClass);
  }

  private static void legend(Canvas c, double x, double y) {
    String[][] items = {{OFFERED, "offered"}, {ORACLE, "exact central limiter (oracle)"},
        {ADMITTED, "admitted"}, {LIMIT, "limit"}, {LATENCY, "store p99"}};
    double at = x;
    for (String[] item : items) {
      c.line(at, y - 4, at + 18, y - 4, item[0], 2, false, "legend");
      c.text(at + 22, y, item[1], 10, "start", Plot.INK, false);
      at += 30 + item[1].length() * 6;
    }
  }
}

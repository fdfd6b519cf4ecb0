package dev.sluice.cli;

import java.util.List;
import java.util.Locale;

/**
 * Draws one panel per algorithm: the level over time, the capacity as a dashed line, each
 * arrival marked admitted, rejected or delayed, and for the queue its output timeline.
 */
final class Plot {
  static final String LEVEL = "#1f77b4";
  static final String CAPACITY = "#d62728";
  static final String ADMITTED = "#2ca02c";
  static final String REJECTED = "#d62728";
  static final String DELAYED = "#ff7f0e";
  static final String OUTPUT = "#9467bd";
  static final String GRID = "#e5e5e5";
  static final String INK = "#333333";

  static final int LEFT = 70;
  static final int RIGHT = 30;
  static final int TOP = 70;
  static final int PANEL = 150;
  static final int GAP = 40;
  static final int BOTTOM = 50;
  static final int MAX_MARKERS = 4000;

  private Plot() {}

  static int height(int panels) {
    return TOP + panels * PANEL + (panels - 1) * GAP + BOTTOM;
  }

  /** One algorithm's panel content. */
  record Panel(Simulation.Result result, Simulation.Trace trace) {}

  static void draw(Canvas c, int width, String title, double capacity, List<Panel> panels,
      boolean fill) {
    long from = panels.get(0).trace().from;
    long to = panels.get(0).trace().to;
    double plotW = width - LEFT - RIGHT;
    c.text(LEFT, 24, title, 15, "start", INK, true);
    legend(c, LEFT, 46);
    double[] ticks = niceTicks(from / 1e9, to / 1e9);
    for (int p = 0; p < panels.size(); p++) {
      Panel panel = panels.get(p);
      double top = TOP + p * (PANEL + GAP);
      double bottom = top + PANEL;
      double levelTop = top + 18;             // band for arrival markers above the capacity
      double levelBottom = bottom - (panel.result().algo == Algo.LEAKY_QUEUE ? 22 : 0);
      double yMax = capacity;
      c.group("panel-" + panel.result().algo.id);
      Simulation.Result r = panel.result();
      boolean filling = fill && r.algo != Algo.LEAKY_QUEUE;
      c.text(LEFT, top - 6, String.format(Locale.ROOT, "%s — %s %d of %d, %s %d%s",
          r.algo.id + (filling ? " (fillUp)" : ""), filling ? "stayed below capacity" : "admitted",
          r.admitted, r.offered, filling ? "reached capacity" : "rejected", r.rejected,
          r.delayed > 0 ? String.format(Locale.ROOT, ", delayed %d (max %s)", r.delayed,
              Report.millis(r.maxDelayNanos)) : ""), 12, "start", INK, true);
      // axes and grid
      for (double t : ticks) {
        double x = LEFT + (t * 1e9 - from) / (to - from) * plotW;
        c.line(x, top, x, bottom, GRID, 1, false, "grid");
      }
      c.line(LEFT, levelBottom, LEFT + plotW, levelBottom, INK, 1, false, "axis");
      c.line(LEFT, top, LEFT, bottom, INK, 1, false, "axis");
      for (int k = 0; k <= 2; k++) {
        double v = yMax * k / 2;
        double y = levelBottom - v / yMax * (levelBottom - levelTop);
        c.text(LEFT - 6, y + 4, Report.num(Math.round(v * 100) / 100.0), 10, "end", INK, false);
      }
      c.text(18, (levelTop + levelBottom) / 2, "level", 11, "middle", INK, false);
      c.line(LEFT, levelTop, LEFT + plotW, levelTop, CAPACITY, 1.2, true, "capacity");
      c.text(LEFT + plotW, levelTop - 3, "capacity " + Report.num(capacity), 10, "end", CAPACITY, false);
      // level
      List<double[]> pts = panel.trace().level;
      double[] xs = new double[pts.size()];
      double[] ys = new double[pts.size()];
      int n = 0;
      for (double[] pt : pts) {
        if (pt[0] < from || pt[0] > to) {
          continue;
        }
        xs[n] = LEFT + (pt[0] - from) / (to - from) * plotW;
        ys[n] = levelBottom - Math.min(pt[1], yMax) / yMax * (levelBottom - levelTop);
        n++;
      }
      c.polyline(xs, ys, n, LEVEL, 1.6, "level");
      // arrivals and the queue's output
      List<long[]> events = panel.trace().events;
      int stride = Math.max(1, events.size() / MAX_MARKERS);
      for (int i = 0; i < events.size(); i += stride) {
        long[] e = events.get(i);
        double x = LEFT + (e[0] - from) / (double) (to - from) * plotW;
        double y = top + 8;
        if (e[1] == Simulation.Trace.REJECTED) {
          c.marker("cross", x, y, 3.5, REJECTED, "arrival rejected");
        } else if (e[1] == Simulation.Trace.DELAYED) {
          c.marker("triangle", x, y, 3.5, DELAYED, "arrival delayed");
        } else {
          c.marker("circle", x, y, 3, ADMITTED, "arrival admitted");
        }
        if (r.algo == Algo.LEAKY_QUEUE && e[1] != Simulation.Trace.REJECTED) {
          double ox = LEFT + (e[2] - from) / (double) (to - from) * plotW;
          c.marker("tick", ox, bottom - 9, 6, OUTPUT, "output");
        }
      }
      if (r.algo == Algo.LEAKY_QUEUE) {
        c.text(LEFT - 6, bottom - 5, "output", 10, "end", OUTPUT, false);
      }
      c.endGroup();
    }
    double axisY = TOP + panels.size() * (PANEL + GAP) - GAP;
    for (double t : ticks) {
      double x = LEFT + (t * 1e9 - from) / (to - from) * plotW;
      c.line(x, axisY, x, axisY + 5, INK, 1, false, "axis");
      c.text(x, axisY + 18, Report.num(Math.round(t * 1000) / 1000.0), 10, "middle", INK, false);
    }
    c.text(LEFT + plotW / 2, axisY + 38, "time (s)", 12, "middle", INK, false);
  }

  private static void legend(Canvas c, double x, double y) {
    c.line(x, y - 4, x + 22, y - 4, LEVEL, 1.6, false, "legend");
    c.text(x + 27, y, "level", 11, "start", INK, false);
    c.line(x + 75, y - 4, x + 97, y - 4, CAPACITY, 1.2, true, "legend");
    c.text(x + 102, y, "capacity", 11, "start", INK, false);
    c.marker("circle", x + 170, y - 4, 3, ADMITTED, "legend");
    c.text(x + 178, y, "admitted", 11, "start", INK, false);
    c.marker("cross", x + 245, y - 4, 3.5, REJECTED, "legend");
    c.text(x + 253, y, "rejected / reached capacity", 11, "start", INK, false);
    c.marker("triangle", x + 428, y - 4, 3.5, DELAYED, "legend");
    c.text(x + 436, y, "delayed (queue)", 11, "start", INK, false);
    c.marker("tick", x + 540, y - 4, 6, OUTPUT, "legend");
    c.text(x + 547, y, "queue output", 11, "start", INK, false);
  }

  /** About six round tick values between from and to (seconds). */
  static double[] niceTicks(double from, double to) {
    double span = Math.max(to - from, 1e-9);
    double raw = span / 6;
    double mag = Math.pow(10, Math.floor(Math.log10(raw)));
    double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
    double first = Math.ceil(from / step) * step;
    int n = (int) Math.floor((to - first) / step + 1e-9) + 1;
    double[] ticks = new double[Math.max(0, n)];
    for (int i = 0; i < ticks.length; i++) {
      ticks[i] = first + i * step;
    }
    return ticks;
  }
}

package dev.sluice.cli;

import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;

/** Prints simulation results as a table, CSV or JSON. */
final class Report {
  private Report() {}

  static String format(String format, String source, double rate, double capacity,
      List<Simulation.Result> results) {
    switch (format) {
      case "csv":
        return csv(results);
      case "json":
        return json(source, rate, capacity, results);
      default:
        return table(source, rate, capacity, results);
    }
  }

  static String table(String source, double rate, double capacity, List<Simulation.Result> results) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "traffic: %s%nrate %s/s, capacity %s (windows: %s per %s s)%n%n",
        source, num(rate), num(capacity), num(capacity), num(capacity / rate)));
    b.append(String.format(Locale.ROOT, "%-15s %9s %9s %9s %8s %10s %10s %10s  %-26s %s%n",
        "algorithm", "offered", "admitted", "rejected", "delayed", "max delay", "mean delay",
        "first 100ms", "output per second", "longest rejection run"));
    for (Simulation.Result r : results) {
      b.append(String.format(Locale.ROOT, "%-15s %9d %9d %9d %8d %10s %10s %11d  %-26s %d%n",
          r.algo.id, r.offered, r.admitted, r.rejected, r.delayed, millis(r.maxDelayNanos),
          millis(r.meanDelayNanos()), r.first100ms, perSecond(r.perSecond, 6), r.longestRejectionRun));
    }
    return b.toString();
  }

  static String csv(List<Simulation.Result> results) {
    StringBuilder b = new StringBuilder(
        "algorithm,offered,admitted,rejected,delayed,max_delay_ms,mean_delay_ms,first_100ms,per_second,longest_rejection_run\n");
    for (Simulation.Result r : results) {
      b.append(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%.3f,%.3f,%d,\"%s\",%d%n", r.algo.id,
          r.offered, r.admitted, r.rejected, r.delayed, r.maxDelayNanos / 1e6,
          r.meanDelayNanos() / 1e6, r.first100ms, perSecond(r.perSecond, Integer.MAX_VALUE),
          r.longestRejectionRun));
    }
    return b.toString();
  }

  static String json(String source, double rate, double capacity, List<Simulation.Result> results) {
    StringJoiner algos = new StringJoiner(",\n    ", "[\n    ", "\n  ]");
    for (Simulation.Result r : results) {
      StringJoiner ps = new StringJoiner(",", "[", "]");
      for (long s : r.perSecond) {
        ps.add(Long.toString(s));
      }
      algos.add(String.format(Locale.ROOT,
          "{\"algorithm\": \"%s\", \"offered\": %d, \"admitted\": %d, \"rejected\": %d, \"delayed\": %d,"
              + " \"maxDelayMs\": %.3f, \"meanDelayMs\": %.3f, \"first100ms\": %d, \"perSecond\": %s,"
              + " \"longestRejectionRun\": %d}",
          r.algo.id, r.offered, r.admitted, r.rejected, r.delayed, r.maxDelayNanos / 1e6,
          r.meanDelayNanos() / 1e6, r.first100ms, ps, r.longestRejectionRun));
    }
    return String.format(Locale.ROOT,
        "{\n  \"traffic\": \"%s\",\n  \"rate\": %s,\n  \"capacity\": %s,\n  \"algorithms\": %s\n}\n",
        source.replace("\\", "\\\\").replace("\"", "\\\""), num(rate), num(capacity), algos);
  }

  private static String perSecond(long[] counts, int max) {
    StringJoiner j = new StringJoiner(" ");
    for (int i = 0; i < counts.length && i < max; i++) {
      j.add(Long.toString(counts[i]));
    }
    String s = j.toString();
    return counts.length > max ? s + " …" : s;
  }

  static String millis(double nanos) {
    return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
  }

  static String num(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v)
        : new java.math.BigDecimal(Double.toString(v)).stripTrailingZeros().toPlainString();
  }
}

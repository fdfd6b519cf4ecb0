package dev.sluice.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
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
    StringWriter out = new StringWriter();
    try (JsonGenerator g = new JsonFactory()
        .createGenerator(out).useDefaultPrettyPrinter()) {
      g.writeStartObject();
      g.writeStringField("traffic", source);   // escaped by the generator: tabs, quotes, anything
      g.writeFieldName("rate");
      g.writeNumber(new BigDecimal(num(rate)));
      g.writeFieldName("capacity");
      g.writeNumber(new BigDecimal(num(capacity)));
      g.writeArrayFieldStart("algorithms");
      for (Simulation.Result r : results) {
        g.writeStartObject();
        g.writeStringField("algorithm", r.algo.id);
        g.writeNumberField("offered", r.offered);
        g.writeNumberField("admitted", r.admitted);
        g.writeNumberField("rejected", r.rejected);
        g.writeNumberField("delayed", r.delayed);
        g.writeNumberField("maxDelayMs", Math.round(r.maxDelayNanos / 1e3) / 1e3);
        g.writeNumberField("meanDelayMs", Math.round(r.meanDelayNanos() / 1e3) / 1e3);
        g.writeNumberField("first100ms", r.first100ms);
        g.writeArrayFieldStart("perSecond");
        for (long c : r.perSecond) {
          g.writeNumber(c);
        }
        g.writeEndArray();
        g.writeNumberField("longestRejectionRun", r.longestRejectionRun);
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString() + "\n";
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
        : new BigDecimal(Double.toString(v)).stripTrailingZeros().toPlainString();
  }
}

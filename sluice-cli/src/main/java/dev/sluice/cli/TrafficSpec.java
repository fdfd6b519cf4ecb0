package dev.sluice.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * Parses a compact description of traffic into arrivals. Segments follow each other in time,
 * separated by commas:
 *
 * <pre>
 *   idle 5s                 nothing for 5 s
 *   200 in 100ms            200 arrivals spread evenly over 100 ms
 *   300/s for 2s            300 per second for 2 s (also /ms, /m, /h)
 *   at 1.7s                 one arrival at the absolute time 1.7 s
 * </pre>
 *
 * A counted segment may end with modifiers: {@code cost 2.5} (each arrival's cost, default 1),
 * {@code poisson} (exponential gaps with the same mean, seeded) or {@code uniform} (the default).
 * Durations take ns, us, ms, s, m or h. Example: {@code idle 5s, 200 in 100ms, 300/s for 2s}.
 */
final class TrafficSpec {
  private final String text;
  private final Random random;
  private int pos;
  private long cursor;
  private final List<Arrival> out = new ArrayList<>();

  private TrafficSpec(String text, long seed) {
    this.text = text;
    this.random = new Random(seed);
  }

  /** The arrivals, in time order. */
  static List<Arrival> parse(String spec, long seed) {
    TrafficSpec p = new TrafficSpec(spec, seed);
    p.parseAll();
    return p.out;
  }

  private void parseAll() {
    skipSpaces();
    if (pos >= text.length()) {
      throw error("a segment such as 'idle 5s', '200 in 100ms', '300/s for 2s' or 'at 1.5s'");
    }
    for (;;) {
      segment();
      skipSpaces();
      if (pos >= text.length()) {
        return;
      }
      expect(",");
    }
  }

  private void segment() {
    skipSpaces();
    if (peekWord("idle")) {
      word();
      cursor += duration();
      return;
    }
    if (peekWord("at")) {
      word();
      long t = duration();
      if (t < cursor) {
        throw new InputException(String.format(Locale.ROOT,
            "at position %d: 'at' time %s is before the end of the previous segment", pos + 1,
            seconds(t)));
      }
      cursor = t;
      Modifiers m = modifiers();
      out.add(new Arrival(t, m.cost));
      return;
    }
    int start = pos;
    double n = number("a count such as 200, a rate such as 300/s, 'idle' or 'at'");
    skipSpaces();
    long span;
    long count;
    if (text.startsWith("/", pos)) {
      pos++;
      String unit = word();
      double per = unitNanos(unit, pos - unit.length());
      skipSpaces();
      if (!peekWord("for")) {
        throw error("'for' and a duration after the rate, as in '300/s for 2s'");
      }
      word();
      span = duration();
      count = Math.round(n * span / per);
    } else {
      skipSpaces();
      if (!peekWord("in")) {
        throw error("'in' and a duration after the count, as in '200 in 100ms', or a rate such as '300/s'");
      }
      word();
      span = duration();
      if (n != Math.rint(n) || n < 0) {
        throw new InputException("at position " + (start + 1) + ": a count must be a whole number, found " + n);
      }
      count = (long) n;
    }
    Modifiers m = modifiers();
    emit(count, span, m);
  }

  private void emit(long count, long span, Modifiers m) {
    if (count > 50_000_000) {
      throw new InputException("a segment of " + count + " arrivals is more than 50,000,000");
    }
    if (m.poisson) {
      double mean = count == 0 ? 0 : (double) span / count;
      double t = 0;
      for (;;) {
        t += -Math.log(1 - random.nextDouble()) * mean;
        if (t >= span || count == 0) {
          break;
        }
        out.add(new Arrival(cursor + (long) t, m.cost));
      }
    } else {
      for (long i = 0; i < count; i++) {
        out.add(new Arrival(cursor + (long) ((double) span * i / count), m.cost));
      }
    }
    cursor += span;
  }

  private static final class Modifiers {
    double cost = 1;
    boolean poisson;
  }

  private Modifiers modifiers() {
    Modifiers m = new Modifiers();
    for (;;) {
      skipSpaces();
      if (peekWord("cost")) {
        word();
        int at = pos;
        m.cost = number("a cost such as 2.5");
        if (!(m.cost > 0) || Double.isInfinite(m.cost)) {
          throw new InputException("at position " + (at + 1) + ": cost must be positive and finite, found " + m.cost);
        }
      } else if (peekWord("poisson")) {
        word();
        m.poisson = true;
      } else if (peekWord("uniform")) {
        word();
        m.poisson = false;
      } else {
        return m;
      }
    }
  }

  private long duration() {
    skipSpaces();
    int start = pos;
    double v = number("a duration such as 100ms or 2s");
    String unit = word();
    if (unit.isEmpty()) {
      throw new InputException("at position " + (pos + 1)
          + ": expected a unit (ns, us, ms, s, m or h) after " + text.substring(start, pos));
    }
    double nanos = v * unitNanos(unit, pos - unit.length());
    if (nanos < 0 || nanos > 1e18) {
      throw new InputException("at position " + (start + 1) + ": duration out of range");
    }
    return (long) nanos;
  }

  private double unitNanos(String unit, int at) {
    switch (unit) {
      case "ns": return 1;
      case "us": return 1e3;
      case "ms": return 1e6;
      case "s": return 1e9;
      case "m": return 60e9;
      case "h": return 3600e9;
      default:
        throw new InputException("at position " + (at + 1)
            + ": expected a unit (ns, us, ms, s, m or h), found '" + unit + "'");
    }
  }

  private double number(String expected) {
    skipSpaces();
    int start = pos;
    while (pos < text.length() && (Character.isDigit(text.charAt(pos)) || text.charAt(pos) == '.'
        || text.charAt(pos) == '_')) {
      pos++;
    }
    String s = text.substring(start, pos).replace("_", "");
    try {
      if (s.isEmpty()) {
        throw new NumberFormatException();
      }
      return Double.parseDouble(s);
    } catch (NumberFormatException e) {
      pos = start;
      throw error(expected);
    }
  }

  private String word() {
    skipSpaces();
    int start = pos;
    while (pos < text.length() && Character.isLetter(text.charAt(pos))) {
      pos++;
    }
    return text.substring(start, pos).toLowerCase(Locale.ROOT);
  }

  private boolean peekWord(String w) {
    int save = pos;
    String got = word();
    pos = save;
    return got.equals(w);
  }

  private void expect(String s) {
    skipSpaces();
    if (!text.startsWith(s, pos)) {
      throw error("'" + s + "' between segments");
    }
    pos += s.length();
  }

  private void skipSpaces() {
    while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
      pos++;
    }
  }

  private InputException error(String expected) {
    String found = pos >= text.length() ? "the end of the spec"
        : "'" + text.substring(pos, Math.min(text.length(), pos + 12)) + "'";
    return new InputException("at position " + (pos + 1) + ": expected " + expected + ", found " + found);
  }

  static String seconds(long nanos) {
    return String.format(Locale.ROOT, "%.3fs", nanos / 1e9);
  }
}

package dev.sluice.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads arrivals from CSV: one line per request, {@code time[,cost]}; time in seconds from 0
 * (a decimal number), cost default 1. A first line that does not start with a number is a
 * header; blank lines and lines starting with {@code #} are skipped. Times must not go backwards.
 */
final class CsvArrivals {
  private CsvArrivals() {}

  static List<Arrival> read(BufferedReader in) throws IOException {
    List<Arrival> out = new ArrayList<>();
    String line;
    int n = 0;
    long last = Long.MIN_VALUE;
    while ((line = in.readLine()) != null) {
      n++;
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        continue;
      }
      String[] cells = trimmed.split(",", -1);
      if (n == 1 && !cells[0].strip().isEmpty() && !startsNumeric(cells[0].strip())) {
        continue;   // header
      }
      if (cells.length > 2) {
        throw new InputException("line " + n + ", column " + (cells[0].length() + cells[1].length() + 3)
            + ": expected at most two fields (time,cost), found " + cells.length);
      }
      double seconds = field(cells[0], n, 1, "a time in seconds such as 1.25");
      if (seconds < 0 || seconds > 1e9) {
        throw new InputException("line " + n + ", column 1: expected a time between 0 and 1e9 seconds, found " + cells[0].strip());
      }
      double cost = 1;
      if (cells.length == 2 && !cells[1].isBlank()) {
        cost = field(cells[1], n, cells[0].length() + 2, "a positive cost such as 2.5");
        if (!(cost > 0) || Double.isInfinite(cost)) {
          throw new InputException("line " + n + ", column " + (cells[0].length() + 2)
              + ": expected a positive finite cost, found " + cells[1].strip());
        }
      }
      long nanos = Math.round(seconds * 1e9);
      if (nanos < last) {
        throw new InputException("line " + n + ", column 1: times must not go backwards ("
            + cells[0].strip() + " after " + (last / 1e9) + ")");
      }
      last = nanos;
      out.add(new Arrival(nanos, cost));
    }
    return out;
  }

  private static boolean startsNumeric(String s) {
    char c = s.charAt(0);
    return Character.isDigit(c) || c == '.' || c == '-' || c == '+';
  }

  private static double field(String raw, int line, int column, String expected) {
    String s = raw.strip();
    try {
      double v = Double.parseDouble(s);
      if (Double.isNaN(v)) {
        throw new NumberFormatException();
      }
      return v;
    } catch (NumberFormatException e) {
      throw new InputException("line " + line + ", column " + column + ": expected " + expected
          + ", found '" + s + "'");
    }
  }
}

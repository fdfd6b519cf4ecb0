package dev.sluice.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads {@link MysqlPairedLoad}'s raw output (several runs, appended) and gives, per setting,
 * every run's Sluice / Bucket4j ratio of totals, their mean and standard deviation, and the
 * one-sided 95% lower bound of the mean (Student's t): the figure that says whether a setting is
 * at least some ratio across runs rather than in one of them.
 *
 * <p>A setting is read from each run's first line ({@code mysql: <url>, ..., <cell>, ...,
 * server options ...}): the driver (server-prepared if the URL has
 * {@code useServerPrepStmts=true}, else text), the commits (flushed once a second with {@code
 * --innodb-flush-log-at-trx-commit=2}, else durable) and the cell ({@code hot keys, 1 callers}).
 * A summary line kept without its run ({@code #   flush ...: ... ratio of totals ...}) is a
 * server-prepared, durable run of the hot key with one caller, or a text one if it says
 * {@code (no option)}: how {@code docs/results/mysql-paired.txt} keeps runs whose rounds were
 * not kept.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.PairedSummary docs/results/mysql-paired.txt}.
 */
public final class PairedSummary {
  private static final Pattern TOTALS = Pattern.compile("ratio of totals (\\d+(?:\\.\\d+)?)");
  private static final Pattern CELL = Pattern.compile(", (\\S+ keys, \\d+ callers),");
  private static final String KEPT_SUMMARY = "#   ";
  private static final String KEPT_CELL = "hot keys, 1 callers";

  private PairedSummary() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: PairedSummary <MysqlPairedLoad output, e.g. docs/results/mysql-paired.txt>");
      System.exit(2);
    }
    for (Map.Entry<String, List<Double>> e : ratios(Files.readAllLines(Path.of(args[0]))).entrySet()) {
      List<Double> xs = e.getValue();
      StringBuilder runs = new StringBuilder();
      for (double x : xs) {
        runs.append(runs.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2f", x));
      }
      System.out.printf(Locale.ROOT, "%s: %d runs (%s)%n", e.getKey(), xs.size(), runs);
      if (xs.size() > 1) {
        System.out.printf(Locale.ROOT, "  mean %.3f, standard deviation %.3f, one-sided 95%% lower"
            + " bound of the mean %.3f; runs below 2: %d%n", mean(xs), deviation(xs),
            lowerBound95(xs), xs.stream().filter(x -> x < 2).count());
      }
    }
  }

  /** Each setting's ratios of totals, in the order the file gives them. */
  static Map<String, List<Double>> ratios(List<String> lines) {
    Map<String, List<Double>> bySetting = new LinkedHashMap<>();
    String setting = null;
    for (String line : lines) {
      if (line.startsWith("mysql: ")) {
        Matcher cell = CELL.matcher(line);
        setting = setting(line.contains("useServerPrepStmts=true"),
            line.contains("--innodb-flush-log-at-trx-commit=2"),
            cell.find() ? cell.group(1) : "cell not given");
        continue;
      }
      Matcher m = TOTALS.matcher(line);
      if (!m.find()) {
        continue;
      }
      String to = line.startsWith(KEPT_SUMMARY)
          ? setting(!line.contains("(no option)"), false, KEPT_CELL) : setting;
      if (to == null) {
        throw new IllegalArgumentException("a ratio of totals before any run's first line: " + line);
      }
      bySetting.computeIfAbsent(to, k -> new ArrayList<>()).add(Double.parseDouble(m.group(1)));
    }
    return bySetting;
  }

  private static String setting(boolean serverPrepared, boolean flushedOnceASecond, String cell) {
    return cell + ", " + (serverPrepared ? "server-prepared" : "text") + ", "
        + (flushedOnceASecond ? "flushed once a second" : "durable");
  }

  static double mean(List<Double> xs) {
    double sum = 0;
    for (double x : xs) {
      sum += x;
    }
    return sum / xs.size();
  }

  /** The sample standard deviation (n - 1). */
  static double deviation(List<Double> xs) {
    double mean = mean(xs);
    double squares = 0;
    for (double x : xs) {
      squares += (x - mean) * (x - mean);
    }
    return Math.sqrt(squares / (xs.size() - 1));
  }

  /** The mean less t(0.95, n - 1) standard errors; at least two runs. */
  static double lowerBound95(List<Double> xs) {
    if (xs.size() < 2) {
      throw new IllegalArgumentException("a lower bound needs at least 2 runs but got " + xs.size());
    }
    return mean(xs) - t95(xs.size() - 1) * deviation(xs) / Math.sqrt(xs.size());
  }

  /** Student's t, one-sided 0.95 quantile, for 1 to 30 degrees of freedom. */
  private static final double[] T95 = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
      1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721,
      1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};

  /**
   * Student's t one-sided 0.95 quantile: the table to 30 degrees of freedom, then the
   * Cornish-Fisher expansion about the normal's 1.645 (within 0.001 of the exact value there).
   */
  static double t95(int df) {
    if (df < 1) {
      throw new IllegalArgumentException("degrees of freedom must be at least 1 but was " + df);
    }
    if (df <= T95.length) {
      return T95[df - 1];
    }
    double z = 1.6448536;
    return z + (z * z * z + z) / (4.0 * df)
        + (5 * Math.pow(z, 5) + 16 * z * z * z + 3 * z) / (96.0 * df * df);
  }
}

package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks a Grafana dashboard (JSON, PromQL targets) against what the code exports: every metric
 * a query names is in the Prometheus exposition given, and every label a query selects or
 * groups by is one that metric has.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class Dashboards {
  private static final Pattern EXPR = Pattern.compile("\"expr\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final Pattern METRIC = Pattern.compile("\\b(sluice_[a-z0-9_]+)\\b(\\{[^}]*\\})?");
  private static final Pattern MATCHER = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)");
  private static final Pattern BY = Pattern.compile("\\b(?:by|without)\\s*\\(([^)]*)\\)");
  private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");

  private Dashboards() {}

  /** The metrics of an exposition and the label names each has. */
  public static Map<String, Set<String>> exported(String exposition) {
    Map<String, Set<String>> out = new HashMap<>();
    for (String line : exposition.lines().toList()) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      Matcher m = SAMPLE.matcher(line);
      if (!m.find()) {
        continue;
      }
      Set<String> labels = out.computeIfAbsent(m.group(1), k -> new TreeSet<>());
      if (m.group(3) != null) {
        Matcher l = LABEL.matcher(m.group(3));
        while (l.find()) {
          labels.add(l.group(1));
        }
      }
    }
    return out;
  }

  /** The queries of a dashboard, unescaped. */
  public static List<String> queries(Path dashboard) throws IOException {
    List<String> out = new ArrayList<>();
    Matcher m = EXPR.matcher(Files.readString(dashboard));
    while (m.find()) {
      out.add(m.group(1).replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    return out;
  }

  /**
   * Asserts that every query of {@code dashboard} names metrics {@code exposition} has, with the
   * labels it uses.
   */
  public static void assertMatches(Path dashboard, String exposition) throws IOException {
    Map<String, Set<String>> exported = exported(exposition);
    List<String> queries = queries(dashboard);
    assertThat(queries).as("%s has queries", dashboard).isNotEmpty();
    List<String> problems = new ArrayList<>();
    for (String q : queries) {
      Matcher m = METRIC.matcher(q);
      Set<String> labelsOfMetrics = new TreeSet<>();
      boolean any = false;
      while (m.find()) {
        any = true;
        String name = m.group(1);
        Set<String> labels = exported.get(name);
        if (labels == null) {
          problems.add(dashboard.getFileName() + ": '" + name + "' is not exported (query: "
              + q + ")");
          continue;
        }
        labelsOfMetrics.addAll(labels);
        labelsOfMetrics.add("le");
        if (m.group(2) != null) {
          Matcher l = MATCHER.matcher(m.group(2));
          while (l.find()) {
            if (!labels.contains(l.group(1))) {
              problems.add(dashboard.getFileName() + ": '" + name + "' has no label '"
                  + l.group(1) + "' (it has " + labels + ")");
            }
          }
        }
      }
      if (!any) {
        problems.add(dashboard.getFileName() + ": a query names no sluice metric: " + q);
      }
      Matcher by = BY.matcher(q);
      while (by.find()) {
        for (String label : by.group(1).split(",", -1)) {
          String l = label.trim();
          if (!l.isEmpty() && !labelsOfMetrics.contains(l)) {
            problems.add(dashboard.getFileName() + ": groups by '" + l + "', which no metric of"
                + " the query has: " + q);
          }
        }
      }
    }
    assertThat(problems).as("the dashboard's queries against the exported metrics").isEmpty();
  }
}

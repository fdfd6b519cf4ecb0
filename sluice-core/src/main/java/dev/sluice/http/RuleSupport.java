package dev.sluice.http;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/** The checks the HTTP filters' rules share (servlet, WebFlux). */
public final class RuleSupport {
  private RuleSupport() {}

  /**
   * HTTP methods in upper case.
   *
   * @throws IllegalArgumentException naming one that is not a method name
   */
  public static Set<String> methods(String... methods) {
    TreeSet<String> m = new TreeSet<>();
    for (String s : methods) {
      if (s == null || !s.matches("[A-Za-z]+")) {
        throw new IllegalArgumentException("not an HTTP method: '" + s + "' in "
            + Arrays.toString(methods));
      }
      m.add(s.toUpperCase(Locale.ROOT));
    }
    return Set.copyOf(m);
  }

  /**
   * Checks that requests held to {@code limits} can be queued: only buckets have a rate to
   * release them at.
   *
   * @throws IllegalArgumentException naming the rule and the first window limit
   */
  public static void checkQueueable(List<Limit> limits, String rule) {
    for (Limit l : limits) {
      if (l.algorithm() == Algorithm.FIXED_WINDOW || l.algorithm() == Algorithm.SLIDING_WINDOW) {
        throw new IllegalArgumentException("queue mode needs bucket limits (leaky bucket, token"
            + " bucket, GCRA) but rule " + rule + " has " + l.name());
      }
    }
  }
}

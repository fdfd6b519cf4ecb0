package dev.sluice.internal;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * The checks of the HTTP filters' rules (servlet, WebFlux) and of the Spring starter's rules. Not
 * API: exported only to Sluice's own modules.
 */
public final class RuleChecks {
  private RuleChecks() {}

  /** The methods of HTTP (RFC 9110) and PATCH (RFC 5789). */
  public static final Set<String> HTTP_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE",
      "CONNECT", "OPTIONS", "TRACE", "PATCH");

  /**
   * HTTP methods in upper case: those of {@link #HTTP_METHODS}, in any case (a misspelt method,
   * {@code GETT}, would never match a request, so the rule would silently limit nothing).
   *
   * @throws IllegalArgumentException naming one that is not an HTTP method
   */
  public static Set<String> methods(String... methods) {
    TreeSet<String> m = new TreeSet<>();
    for (String s : methods) {
      String upper = s == null ? null : s.trim().toUpperCase(Locale.ROOT);
      if (upper == null || !HTTP_METHODS.contains(upper)) {
        throw new IllegalArgumentException("not an HTTP method: '" + s + "' (expected one of"
            + " GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, TRACE, CONNECT) in "
            + Arrays.toString(methods));
      }
      m.add(upper);
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

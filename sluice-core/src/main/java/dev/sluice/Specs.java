package dev.sluice;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the specs of every kind of limit share: how a problem is reported, and the words for
 * numbers, durations and failure policies. {@link LimitSpec} reads a rate limit with them, and
 * {@link dev.sluice.concurrency.ConcurrencySpec} a concurrency limit, so both say the same thing
 * about the same mistake.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#policies-yaml">docs/server.md, "Policies (YAML)"</a>.
 */
public final class Specs {
  private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h|d)");

  /** Where the problems of a spec go: each one, with the field it is about. */
  @FunctionalInterface
  public interface Problems {
    /**
     * One problem.
     *
     * @param field the field it is about, or null when it is about the spec as a whole
     * @param message what is wrong, quoting the field and the value
     */
    void report(String field, String message);
  }

  private Specs() {}

  /** A finite number, or NaN after reporting that {@code field} is not one. */
  public static double number(String field, String text, Problems problems) {
    try {
      double v = Double.parseDouble(text == null ? "" : text.trim());
      if (Double.isFinite(v)) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problems.report(field, "'" + field + "' must be a number but was '" + text + "'");
    return Double.NaN;
  }

  /** A positive finite number, or NaN after reporting that {@code field} is not one. */
  public static double positive(String field, String text, Problems problems) {
    double v = number(field, text, problems);
    if (v <= 0) {
      problems.report(field, "'" + field + "' must be positive but was '" + text.trim() + "'");
      return Double.NaN;
    }
    return v;
  }

  /** A duration such as {@code 30s}; null after reporting that {@code field} is not one. */
  public static Duration duration(String field, String text, Problems problems) {
    Duration d = text == null ? null : parseDuration(text.trim());
    if (d == null) {
      problems.report(field, "'" + field + "' must be a duration such as 250ms, 30s, 5m, 1h or 1d"
          + " but was '" + text + "'");
    }
    return d;
  }

  /** {@code 250ms}, {@code 30s}, {@code 1.5m}, {@code 1h}, {@code 7d}; null if not one. */
  public static Duration parseDuration(String s) {
    Matcher m = DURATION.matcher(s);
    if (!m.matches()) {
      return null;
    }
    double v = Double.parseDouble(m.group(1));
    long unitNanos = switch (m.group(2)) {
      case "ms" -> 1_000_000L;
      case "s" -> 1_000_000_000L;
      case "m" -> 60_000_000_000L;
      case "h" -> 3_600_000_000_000L;
      default -> 86_400_000_000_000L;
    };
    double nanos = v * unitNanos;
    if (nanos < 1 || nanos > 9.2e18) {
      return null;
    }
    return Duration.ofNanos(Math.round(nanos));
  }

  /**
   * A failure policy by the words configuration files use: {@code closed}, {@code open},
   * {@code fallback}, {@code local-share}; null if not one.
   */
  public static StoreFailure storeFailure(String word) {
    return word == null ? null : switch (word.trim().toLowerCase(Locale.ROOT)) {
      case "closed" -> StoreFailure.FAIL_CLOSED;
      case "open" -> StoreFailure.FAIL_OPEN;
      case "fallback" -> StoreFailure.FALLBACK_IN_MEMORY;
      case "local-share" -> StoreFailure.LOCAL_SHARE;
      default -> null;
    };
  }
}

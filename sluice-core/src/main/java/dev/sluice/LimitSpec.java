package dev.sluice;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A limit written as words, the way Sluice's configuration files write it: the service's policies
 * YAML, its Envoy section and the Spring Boot starter's {@code application.yml} all read limits
 * through this one class, so one format is learned once and every file reports the same problems
 * in the same words.
 *
 * <pre>
 * algorithm: leaky-bucket | token-bucket | gcra | fixed-window | sliding-window
 * capacity:  10          # buckets (burst is a synonym for GCRA's)
 * rate:      10/s        # buckets: amount/period (10/s, 100/1m, 1.5/s, 5/250ms, 1000/30d)
 * limit:     1000        # windows
 * window:    1h          # windows: 250ms, 30s, 1.5m, 1h, 7d
 * penalty:   30s         # optional: refuse everything this long after a refusal
 * name:      api-burst   # optional: the limit's name in headers and metrics
 * </pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#policies-yaml">docs/server.md, "Policies (YAML)"</a>.
 */
public final class LimitSpec {
  /** The fields a limit may have. */
  public static final Set<String> FIELDS =
      Set.of("algorithm", "capacity", "burst", "rate", "limit", "window", "penalty", "name");

  private LimitSpec() {}

  /**
   * The limit {@code fields} describe, or null after reporting every problem found.
   *
   * @param fields field to value (only {@link #FIELDS}; the caller reports others)
   * @param defaultName the limit's name when {@code name} is not given
   * @param ticksPerSecond the resolution of the store's clock the limit must fit
   *     (1,000,000,000 in memory, 1,000,000 for Redis and PostgreSQL), or 0 to check everything
   *     but that (when the store is not chosen yet)
   */
  public static Limit parse(Map<String, String> fields, String defaultName, long ticksPerSecond,
      Specs.Problems problems) {
    int[] count = {0};
    Specs.Problems p = (field, message) -> {
      count[0]++;
      problems.report(field, message);
    };
    String alg = fields.get("algorithm");
    if (alg == null) {
      p.report(null, "'algorithm' is missing (leaky-bucket, token-bucket, gcra, fixed-window or"
          + " sliding-window)");
      return null;
    }
    String algorithm = alg.trim().toLowerCase(Locale.ROOT);
    boolean bucket = switch (algorithm) {
      case "leaky-bucket", "token-bucket", "gcra" -> true;
      case "fixed-window", "sliding-window" -> false;
      default -> {
        p.report("algorithm", "unknown algorithm '" + alg + "' (expected leaky-bucket,"
            + " token-bucket, gcra, fixed-window or sliding-window)");
        yield false;
      }
    };
    if (count[0] > 0) {
      // still check what can be checked without the algorithm, so every problem shows at once
      for (String k : new String[] {"capacity", "burst", "limit"}) {
        if (fields.containsKey(k)) {
          Specs.positive(k, fields.get(k), p);
        }
      }
      if (fields.containsKey("rate")) {
        rate(fields.get("rate"), p);
      }
      for (String k : new String[] {"window", "penalty"}) {
        if (fields.containsKey(k)) {
          Specs.duration(k, fields.get(k), p);
        }
      }
      return null;
    }
    try {
      Limit l;
      if (bucket) {
        for (String wrong : new String[] {"limit", "window"}) {
          if (fields.containsKey(wrong)) {
            p.report(wrong, "'" + wrong + "' is for windows; a " + algorithm + " takes 'capacity'"
                + " and 'rate'");
            return null;
          }
        }
        String capField = fields.containsKey("capacity") ? "capacity" : "burst";
        String cap = fields.get(capField);
        String rate = fields.get("rate");
        if (cap == null || rate == null) {
          p.report(null, "a " + algorithm + " needs 'capacity' and 'rate'");
          return null;
        }
        double c = Specs.positive(capField, cap, p);
        Rate r = rate(rate, p);
        if (fields.containsKey("penalty")) {
          Specs.duration("penalty", fields.get("penalty"), p);
        }
        if (count[0] > 0) {
          return null;
        }
        l = of(algorithm, c, r, null);
      } else {
        for (String wrong : new String[] {"capacity", "rate", "burst"}) {
          if (fields.containsKey(wrong)) {
            p.report(wrong, "'" + wrong + "' is for buckets; a " + algorithm + " takes 'limit'"
                + " and 'window'");
            return null;
          }
        }
        String lim = fields.get("limit");
        String win = fields.get("window");
        if (lim == null || win == null) {
          p.report(null, "a " + algorithm + " needs 'limit' and 'window'");
          return null;
        }
        double n = Specs.positive("limit", lim, p);
        Duration w = Specs.duration("window", win, p);
        if (w != null && (w.isZero() || w.isNegative())) {
          p.report("window", "'window' must be longer than 0 but was '" + win + "'");
        }
        if (fields.containsKey("penalty")) {
          Specs.duration("penalty", fields.get("penalty"), p);
        }
        if (count[0] > 0) {
          return null;
        }
        l = of(algorithm, n, null, w);
      }
      if (fields.containsKey("penalty")) {
        Duration d = Specs.duration("penalty", fields.get("penalty"), p);
        if (d == null) {
          return null;
        }
        l = l.withPenalty(d);
      }
      String name = fields.get("name");
      l = l.named(name != null ? name : defaultName);
      if (ticksPerSecond > 0) {
        l.checkRepresentable(ticksPerSecond);   // e.g. capacity 1e30, rate 1/100000d
      }
      return l;
    } catch (IllegalArgumentException e) {
      p.report(null, e.getMessage());
      return null;
    }
  }

  /**
   * The limit an algorithm's word makes: a bucket of {@code size} draining at {@code rate}
   * (leaky-bucket, token-bucket, gcra), or a window of {@code size} per {@code window}
   * (fixed-window, sliding-window); the other of {@code rate} and {@code window} is ignored.
   *
   * @throws IllegalArgumentException for another word, listing the five, or for parameters the
   *     limit refuses
   */
  public static Limit of(String algorithm, double size, Rate rate, Duration window) {
    return switch (algorithm) {
      case "leaky-bucket" -> Limit.leakyBucket(size, rate);
      case "token-bucket" -> Limit.tokenBucket(size, rate);
      case "gcra" -> Limit.gcra(rate, size);
      case "fixed-window" -> Limit.fixedWindow(size, window);
      case "sliding-window" -> Limit.slidingWindow(size, window);
      default -> throw new IllegalArgumentException("unknown algorithm '" + algorithm
          + "' (expected leaky-bucket, token-bucket, gcra, fixed-window or sliding-window)");
    };
  }

  /**
   * {@code 10/s}, {@code 100/1m}, {@code 1.5/s}, {@code 5/250ms}; null after reporting that
   * {@code rate} is not one.
   */
  public static Rate rate(String text, Specs.Problems problems) {
    String s = text == null ? "" : text.trim();
    int slash = s.indexOf('/');
    if (slash > 0) {
      try {
        double amount = Double.parseDouble(s.substring(0, slash).trim());
        String per = s.substring(slash + 1).trim();
        Duration period = Specs.parseDuration(
            Character.isDigit(per.isEmpty() ? 'x' : per.charAt(0)) ? per : "1" + per);
        if (period != null && Double.isFinite(amount)) {
          return Rate.of(amount, period);
        }
      } catch (NumberFormatException e) {
        // reported below
      } catch (IllegalArgumentException e) {
        problems.report("rate", "'rate' " + e.getMessage());
        return null;
      }
    }
    problems.report("rate", "'rate' must look like 10/s, 100/1m, 1.5/s or 5/250ms but was '" + s
        + "'");
    return null;
  }
}

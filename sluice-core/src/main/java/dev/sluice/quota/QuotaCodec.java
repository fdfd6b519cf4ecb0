package dev.sluice.quota;

import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.Rate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Quotas and changes as text, for the stores that keep them: one line each (no tab, newline or
 * carriage return inside), fields separated by tabs, each field escaped ({@code %} followed by
 * two hex digits for {@code % \t \n \r ; ,}). Decoding what encoding gave is exact.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 */
public final class QuotaCodec {
  private QuotaCodec() {}

  /** The quota as one line. */
  public static String encode(Quota q) {
    List<String> limits = new ArrayList<>();
    for (Limit l : q.limits()) {
      limits.add(String.join(",", l.algorithm().id(), Double.toString(l.capacity()),
          l.rate() == null ? "" : Double.toString(l.rate().amount()),
          l.rate() == null ? "" : Long.toString(l.rate().period().toNanos()),
          l.rate() == null ? Long.toString(l.window().toNanos()) : "",
          Long.toString(l.penalty().toNanos()), escape(l.name())));
    }
    return String.join("\t", "q1", escape(q.policy()), escape(q.key()), q.prefix() ? "1" : "0",
        Integer.toString(q.concurrency()),
        q.expiresAt() == null ? "" : q.expiresAt().toString(), escape(q.reason()),
        String.join(";", limits));
  }

  /**
   * The quota {@code line} encodes.
   *
   * @throws IllegalArgumentException naming the line if it is not one
   */
  public static Quota decode(String line) {
    try {
      String[] f = line.split("\t", -1);
      if (f.length != 8 || !f[0].equals("q1")) {
        throw new IllegalArgumentException("not a quota of this version");
      }
      List<Limit> limits = new ArrayList<>();
      if (!f[7].isEmpty()) {
        for (String l : f[7].split(";", -1)) {
          String[] p = l.split(",", -1);
          Rate rate = p[2].isEmpty() ? null
              : Rate.of(Double.parseDouble(p[2]), Duration.ofNanos(Long.parseLong(p[3])));
          Duration window = p[4].isEmpty() ? null : Duration.ofNanos(Long.parseLong(p[4]));
          Limit limit = LimitSpec.of(p[0], Double.parseDouble(p[1]), rate, window);
          long penalty = Long.parseLong(p[5]);
          if (penalty > 0) {
            limit = limit.withPenalty(Duration.ofNanos(penalty));
          }
          String name = unescape(p[6]);
          if (!name.equals(limit.name())) {
            limit = limit.named(name);
          }
          limits.add(limit);
        }
      }
      return new Quota(unescape(f[1]), unescape(f[2]), f[3].equals("1"), limits,
          Integer.parseInt(f[4]), f[5].isEmpty() ? null : Instant.parse(f[5]), unescape(f[6]));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("a quota that cannot be read (" + e.getMessage()
          + "): '" + line + "'", e);
    }
  }

  /** The change as one line. */
  public static String encode(QuotaChange c) {
    return String.join("\t", "c1", Long.toString(c.version()), c.at().toString(), escape(c.who()),
        c.before() == null ? "" : escape(encode(c.before())),
        c.after() == null ? "" : escape(encode(c.after())), escape(c.reason()));
  }

  /**
   * The change {@code line} encodes.
   *
   * @throws IllegalArgumentException naming the line if it is not one
   */
  public static QuotaChange decodeChange(String line) {
    try {
      String[] f = line.split("\t", -1);
      if (f.length != 7 || !f[0].equals("c1")) {
        throw new IllegalArgumentException("not a change of this version");
      }
      return new QuotaChange(Long.parseLong(f[1]), Instant.parse(f[2]), unescape(f[3]),
          f[4].isEmpty() ? null : decode(unescape(f[4])),
          f[5].isEmpty() ? null : decode(unescape(f[5])), unescape(f[6]));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("a quota change that cannot be read (" + e.getMessage()
          + "): '" + line + "'", e);
    }
  }

  /** The target a store keys a quota by: its policy, whether a prefix, its key. */
  public static String target(String policy, String key, boolean prefix) {
    return escape(policy) + (prefix ? "\t*\t" : "\t=\t") + escape(key);
  }

  /**
   * {@code s} as a field: {@code %} and two hex digits for each of {@code % \t \n \r ; ,}.
   */
  public static String escape(String s) {
    StringBuilder b = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == ',') {
        if (b == null) {
          b = new StringBuilder(s.length() + 8).append(s, 0, i);
        }
        b.append('%').append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 15,
            16));
      } else if (b != null) {
        b.append(c);
      }
    }
    return b == null ? s : b.toString();
  }

  /** The text a field escaped by {@link #escape} holds. */
  public static String unescape(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        b.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}

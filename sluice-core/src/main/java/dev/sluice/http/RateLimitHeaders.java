package dev.sluice.http;

import dev.sluice.Decision;
import dev.sluice.Limit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * HTTP header values for a {@link Decision}: the {@code RateLimit-Policy} and {@code RateLimit}
 * fields of the IETF draft "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers),
 * the older {@code X-RateLimit-*} trio, and {@code Retry-After}. Shared by the servlet filter and
 * the service, so both say exactly the same thing.
 *
 * <p>For each limit: {@code q} is its capacity (rounded down to an integer), {@code w} its window
 * in whole seconds (a bucket's is the time it takes to drain when full), {@code r} what is left
 * (rounded down), {@code t} the seconds until it is empty again (rounded up). {@code Retry-After}
 * is the seconds until the request would fit, rounded up and at least 1.
 *
 * <p>A {@linkplain Decision#isDegraded() degraded} decision (the shared store failed and the
 * failure policy answered) carries the limits ({@code RateLimit-Policy}, {@code X-RateLimit-Limit})
 * but not what is left of them ({@code RateLimit}, {@code X-RateLimit-Remaining},
 * {@code X-RateLimit-Reset}): the quota is not known then, and saying {@code r=0} would be a guess.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-header-fields">docs/server.md, "The header fields"</a>.
 */
public final class RateLimitHeaders {
  /** Which fields to send. */
  public enum Mode {
    /** {@code RateLimit-Policy} and {@code RateLimit} (the IETF draft); the default. */
    IETF,
    /** {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining}, {@code X-RateLimit-Reset}. */
    LEGACY,
    /** No rate-limit fields ({@code Retry-After} is still sent on a rejection). */
    NONE
  }

  private RateLimitHeaders() {}

  /**
   * The fields for {@code d} in this mode, in sending order; {@code Retry-After} is included when
   * the decision is a rejection that a retry can fix.
   */
  public static Map<String, String> of(Decision d, Mode mode) {
    Map<String, String> h = new LinkedHashMap<>(4);
    write(d, mode, h::put);
    return h;
  }

  /** {@link #of} without the map: each field is handed to {@code sink} in sending order. */
  public static void write(Decision d, Mode mode, BiConsumer<String, String> sink) {
    switch (mode) {
      case IETF -> {
        sink.accept("RateLimit-Policy", policy(d));
        if (!d.isDegraded()) {
          sink.accept("RateLimit", rateLimit(d));
        }
      }
      case LEGACY -> {
        Decision tightest = d.perLimit().isEmpty() ? d : tightest(d);
        sink.accept("X-RateLimit-Limit", Long.toString(quota(tightest.limit())));
        if (!d.isDegraded()) {
          sink.accept("X-RateLimit-Remaining", Long.toString(floor(tightest.remaining())));
          sink.accept("X-RateLimit-Reset", Long.toString(ceilSeconds(tightest.resetAfterNanos())));
        }
      }
      case NONE -> { }
    }
    if (!d.isAllowed() && !d.isNeverAdmissible()) {
      sink.accept("Retry-After", retryAfter(d));
    }
  }

  /** The field names {@link #of} may send in this mode, for {@code Access-Control-Expose-Headers}. */
  public static String exposeHeaders(Mode mode) {
    return switch (mode) {
      case IETF -> "RateLimit, RateLimit-Policy, Retry-After";
      case LEGACY -> "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After";
      case NONE -> "Retry-After";
    };
  }

  /** Policy items of recently seen limits (they never change); bounded, cleared when full. */
  private static final ConcurrentHashMap<Limit, String> POLICY_ITEMS =
      new ConcurrentHashMap<>();

  /** {@code "name";q=10;w=60, ...}: one item per limit. */
  public static String policy(Decision d) {
    if (d.perLimit().isEmpty()) {
      Limit l = d.limit();
      String item = POLICY_ITEMS.get(l);
      if (item == null) {
        item = policyItem(l);
        if (POLICY_ITEMS.size() >= 1024) {
          POLICY_ITEMS.clear();
        }
        POLICY_ITEMS.put(l, item);
      }
      return item;
    }
    StringBuilder b = new StringBuilder();
    for (Decision one : each(d)) {
      if (b.length() > 0) {
        b.append(", ");
      }
      b.append(policyItem(one.limit()));
    }
    return b.toString();
  }

  private static String policyItem(Limit l) {
    return sfString(l.name()) + ";q=" + quota(l) + ";w=" + Math.max(1, ceilSeconds(l.window().toNanos()));
  }

  /** {@code "name";r=5;t=30, ...}: one item per limit. */
  public static String rateLimit(Decision d) {
    StringBuilder b = new StringBuilder();
    for (Decision one : each(d)) {
      if (b.length() > 0) {
        b.append(", ");
      }
      b.append(sfString(one.limit().name())).append(";r=").append(floor(one.remaining()))
          .append(";t=").append(ceilSeconds(one.resetAfterNanos()));
    }
    return b.toString();
  }

  /** Seconds until the request would fit, rounded up, at least 1. */
  public static String retryAfter(Decision d) {
    return Long.toString(Math.max(1, ceilSeconds(d.retryAfterNanos())));
  }

  private static List<Decision> each(Decision d) {
    return d.perLimit().isEmpty() ? List.of(d) : d.perLimit();
  }

  private static Decision tightest(Decision d) {
    Decision best = d.perLimit().get(0);
    for (Decision one : d.perLimit()) {
      if (one.remaining() < best.remaining()) {
        best = one;
      }
    }
    return best;
  }

  private static long quota(Limit l) {
    return floor(l.capacity());
  }

  private static long floor(double v) {
    return v <= 0 ? 0 : (long) Math.floor(v + 1e-9);
  }

  /** Whole seconds, rounded up; a very long wait saturates rather than overflows. */
  public static long ceilSeconds(long nanos) {
    if (nanos <= 0) {
      return 0;
    }
    return nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1);
  }

  /** An RFC 8941 sf-string: printable ASCII, with {@code "} and {@code \} escaped. */
  static String sfString(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c >= 0x20 && c < 0x7f) {
        b.append(c);
      } else {
        b.append('?');
      }
    }
    return b.append('"').toString();
  }
}

package dev.sluice.internal;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * A request's deadline from its headers, so that the concurrency filters never queue a request
 * longer than its caller still waits (seed 002's deadline-aware check): the filters wait for a
 * permit at most the smaller of the rule's {@code maxWait} and the deadline less the work's
 * expected time ({@code ConcurrencyLimiter.usefulWait}), and a deadline-aware limiter
 * ({@code ConcurrencyLimiter.Builder.deadlineAware}) refuses at once a request whose expected
 * wait is longer than that.
 *
 * <p>Two forms are read, whatever the header's name:
 *
 * <ul>
 *   <li>gRPC's {@code grpc-timeout}: one to eight digits and a unit, {@code H} (hours),
 *       {@code M} (minutes), {@code S} (seconds), {@code m} (milliseconds), {@code u}
 *       (microseconds) or {@code n} (nanoseconds): {@code 250m} is 250 ms;</li>
 *   <li>a bare number of milliseconds, as Envoy's {@code x-envoy-expected-rq-timeout-ms}.</li>
 * </ul>
 *
 * <p>A value of neither form is refused, naming the header and the value (the filters answer
 * 400): a deadline that cannot be read is not silently ignored.
 */
public final class Deadlines {
  /** gRPC's deadline header: the filters' default. */
  public static final String GRPC_TIMEOUT = "grpc-timeout";
  /** The most digits gRPC allows in a {@code grpc-timeout} value. */
  private static final int GRPC_DIGITS = 8;

  private Deadlines() {}

  /**
   * The time left that {@code value} of header {@code header} says.
   *
   * @throws IllegalArgumentException naming the header and the value if it is neither form
   */
  public static Duration parse(String header, String value) {
    String v = value == null ? "" : value.trim();
    int digits = 0;
    while (digits < v.length() && v.charAt(digits) >= '0' && v.charAt(digits) <= '9') {
      digits++;
    }
    if (digits == 0 || digits > 18 || v.length() > digits + 1
        || (v.length() == digits + 1 && digits > GRPC_DIGITS)) {
      throw bad(header, value);
    }
    long n = Long.parseLong(v.substring(0, digits));
    if (v.length() == digits) {
      return Duration.ofMillis(n);   // a bare number: milliseconds
    }
    switch (v.charAt(digits)) {
      case 'H': return Duration.ofHours(n);
      case 'M': return Duration.ofMinutes(n);
      case 'S': return Duration.ofSeconds(n);
      case 'm': return Duration.ofMillis(n);
      case 'u': return Duration.ofNanos(n * 1_000);
      case 'n': return Duration.ofNanos(n);
      default: throw bad(header, value);
    }
  }

  /**
   * The deadline the first of {@code headers} present says, in order; null when none is.
   *
   * @param headerOf a request's header value by name; null when absent
   * @throws IllegalArgumentException naming the header and the value if a deadline cannot be read
   */
  public static Duration find(List<String> headers, Function<String, String> headerOf) {
    for (String h : headers) {
      String value = headerOf.apply(h);
      if (value != null) {
        return parse(h, value);
      }
    }
    return null;
  }

  private static IllegalArgumentException bad(String header, String value) {
    return new IllegalArgumentException("header " + header.toLowerCase(Locale.ROOT)
        + ": not a deadline (digits and a unit H, M, S, m, u or n as grpc-timeout, or a number of"
        + " milliseconds) but was " + (value == null ? "null" : "'" + value + "'"));
  }
}

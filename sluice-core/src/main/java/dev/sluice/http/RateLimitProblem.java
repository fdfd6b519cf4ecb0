package dev.sluice.http;

import dev.sluice.Decision;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/**
 * What an HTTP server answers for a {@link Decision}: the response header fields, and for a
 * refusal its status and an RFC 9457 problem document ({@code application/problem+json}). The
 * servlet filter, the WebFlux filter and the Spring Boot starter's exception handlers all answer
 * through it, so they answer alike:
 *
 * <ul>
 *   <li>{@code 429 Too Many Requests} when a limit refuses the request, with {@code Retry-After}
 *       (whole seconds, rounded up, at least 1) unless no retry can ever fit it; that includes the
 *       local fallback limiter's refusals while a store is down
 *       ({@link dev.sluice.StoreFailure#FALLBACK_IN_MEMORY});
 *   <li>{@code 503 Service Unavailable} with {@code Retry-After: 1} when the limiter's store is
 *       down and its failure policy refuses without deciding
 *       ({@linkplain Decision#isUnavailable() unavailable}: fail closed);
 *   <li>on every limited response the rate-limit fields of {@link RateLimitHeaders} in the chosen
 *       mode, and {@code Access-Control-Expose-Headers} naming them.
 * </ul>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 *
 * @param status 429 or 503
 * @param title the problem's title
 * @param detail the problem's detail, naming the limit
 * @param members the problem's extension members, as JSON members ({@code "reason":"full"}),
 *     written after {@code detail}; empty for none
 */
public record RateLimitProblem(int status, String title, String detail, String members) {
  /** The media type of {@link #body()}. */
  public static final String MEDIA_TYPE = "application/problem+json";

  /** A problem with no extension members. */
  public RateLimitProblem(int status, String title, String detail) {
    this(status, title, detail, "");
  }

  /**
   * The refusal {@code d} stands for ({@code cost} is the request's, for the message when no
   * retry can fit it).
   *
   * @throws IllegalArgumentException if {@code d} admits the request
   */
  public static RateLimitProblem of(Decision d, double cost) {
    if (d.isAllowed()) {
      throw new IllegalArgumentException("an admitted request is no problem: " + d);
    }
    if (d.isUnavailable()) {
      return new RateLimitProblem(503, "Rate limiter unavailable", "the rate limiter's store cannot"
          + " be reached and its failure policy refuses requests meanwhile");
    }
    if (d.isNeverAdmissible()) {
      return new RateLimitProblem(429, "Too Many Requests", "this request's cost (" + cost
          + ") is more than the limit " + d.limit().name() + " can ever admit");
    }
    return new RateLimitProblem(429, "Too Many Requests", "rate limit " + d.limit().name()
        + " exceeded; retry after " + RateLimitHeaders.retryAfter(d) + " s");
  }

  /**
   * Every header field a response for {@code d} carries, each handed to {@code sink} once (a
   * response's {@code setHeader}), in sending order: the rate-limit fields of {@code mode},
   * {@code Access-Control-Expose-Headers}, and {@code Retry-After} on a refusal that a retry can
   * fix ({@code 1} when the store is down).
   */
  public static void writeHeaders(Decision d, RateLimitHeaders.Mode mode,
      BiConsumer<String, String> sink) {
    boolean unavailable = !d.isAllowed() && d.isUnavailable();
    RateLimitHeaders.write(d, mode, unavailable
        ? (name, value) -> sink.accept(name, name.equals("Retry-After") ? "1" : value) : sink);
    sink.accept("Access-Control-Expose-Headers", RateLimitHeaders.exposeHeaders(mode));
    if (unavailable && d.isNeverAdmissible()) {
      sink.accept("Retry-After", "1");
    }
  }

  /**
   * The problem document: {@code type} {@code about:blank}, title, status, detail, and the
   * extension members.
   */
  public String json() {
    String plain = json(status, title, detail);
    return members == null || members.isEmpty() ? plain
        : plain.substring(0, plain.length() - 1) + "," + members + "}";
  }

  /** {@link #json()} in UTF-8. */
  public byte[] body() {
    return json().getBytes(StandardCharsets.UTF_8);
  }

  /** A problem document with {@code type} {@code about:blank}. */
  public static String json(int status, String title, String detail) {
    return "{\"type\":\"about:blank\",\"title\":" + quote(title) + ",\"status\":" + status
        + ",\"detail\":" + quote(detail) + "}";
  }

  /** {@code s} as a JSON string literal. */
  public static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}

package dev.sluice.internal;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Refusal;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.http.RateLimitProblem;
import java.util.Locale;

/**
 * What an HTTP server answers when a concurrency limit refuses a request, and how a finished
 * request's permit ends; the servlet filter, the WebFlux filter and the Spring Boot starter
 * answer through it, so they answer alike:
 *
 * <ul>
 *   <li>{@code 429 Too Many Requests} when a {@link ConcurrencyScope#CLIENT} rule refuses: the
 *       client has too many requests in flight;</li>
 *   <li>{@code 503 Service Unavailable} when a {@link ConcurrencyScope#ROUTE} or
 *       {@link ConcurrencyScope#GLOBAL} rule refuses (load shed), and whenever the limiter's store
 *       is down and its policy refuses, or the limiter holds its maximum of keys;</li>
 *   <li>both with {@code Retry-After} (whole seconds, at least 1) and an
 *       {@code application/problem+json} body that names the limit and the reason.</li>
 * </ul>
 */
public final class ConcurrencyAnswers {
  private ConcurrencyAnswers() {}

  /**
   * The answer to a refused acquisition of a rule of {@code scope}.
   *
   * @throws IllegalArgumentException if {@code a} acquired a permit
   */
  public static RateLimitProblem problem(Acquisition a, ConcurrencyScope scope) {
    return problem(a, scope, null);
  }

  /**
   * The answer to a refused acquisition of a rule of {@code scope} whose limit is named
   * {@code limit}: the detail names the limit, and the members say, for machines, the limit
   * ({@code "limit"}, when named), the reason ({@code "reason"}: the {@link Refusal} in lower
   * case, such as {@code "full"} or {@code "shed"}), the key's weight in flight
   * ({@code "inFlight"}) and its limit ({@code "max"}).
   *
   * @throws IllegalArgumentException if {@code a} acquired a permit
   */
  public static RateLimitProblem problem(Acquisition a, ConcurrencyScope scope, String limit) {
    if (a.isAcquired()) {
      throw new IllegalArgumentException("an acquired permit is no problem: " + a);
    }
    Refusal why = a.refusal();
    String members = (limit == null ? "" : "\"limit\":" + RateLimitProblem.quote(limit) + ",")
        + "\"reason\":\"" + why.name().toLowerCase(Locale.ROOT) + "\",\"inFlight\":"
        + a.inFlight() + ",\"max\":" + a.limit();
    String named = limit == null ? "" : " " + limit;
    if (why == Refusal.STORE_UNAVAILABLE) {
      return new RateLimitProblem(503, "Concurrency limiter unavailable", "the concurrency"
          + " limiter" + named + "'s store cannot be reached and its failure policy refuses"
          + " requests meanwhile", members);
    }
    if (why == Refusal.KEYS_FULL || why == Refusal.CLOSED || why == Refusal.INTERRUPTED) {
      return new RateLimitProblem(503, "Service Unavailable", "the server cannot take this"
          + " request now (concurrency limit" + named + ": " + reason(a) + ")", members);
    }
    String figures = "concurrency limit" + named + ": " + a.inFlight() + " of " + a.limit()
        + " in flight";
    if (scope == ConcurrencyScope.CLIENT) {
      return new RateLimitProblem(429, "Too Many Requests", "too many requests of this client in"
          + " flight (" + figures + "; " + reason(a) + ")", members);
    }
    return new RateLimitProblem(503, "Service Unavailable", "the server is shedding load ("
        + figures + "; " + reason(a) + ")", members);
  }

  /** Why, in words; a full key with room left is full for another reason, which it names. */
  private static String reason(Acquisition a) {
    Refusal why = a.refusal();
    if (why == Refusal.FULL && a.inFlight() < a.limit()) {
      return a.waiting() > 0 ? "others wait before it"
          : "the permits it may take are in use (its group's, for a limit with groups)";
    }
    switch (why) {
      case SHED: return "this priority's share is in use";
      case QUEUE_FULL: return "the wait queue is full";
      case TIMED_OUT: return "no permit came within the wait";
      case DEADLINE: return "the expected wait is longer than the request's deadline";
      case OVERLOADED: return "the wait queue has stayed above its target delay and sheds";
      case TOO_HEAVY: return "the request weighs more than the limit";
      case KEYS_FULL: return "the limiter holds its maximum of keys";
      case CLOSED: return "the limiter is closed";
      case INTERRUPTED: return "the wait was interrupted";
      default: return "every permit is in flight";
    }
  }

  /**
   * How the permit of a request that finished with {@code status} ends: {@code DROPPED} when
   * it failed ({@code failed}: an exception, a timeout) or the answer is a server error (5xx), what
   * adaptive limits read as overload; {@code IGNORED} for a client error (4xx), which says nothing
   * of the backend; {@code SUCCESS} otherwise.
   */
  public static Outcome outcome(int status, boolean failed) {
    if (failed || status >= 500) {
      return Outcome.DROPPED;
    }
    return status >= 400 ? Outcome.IGNORED : Outcome.SUCCESS;
  }
}

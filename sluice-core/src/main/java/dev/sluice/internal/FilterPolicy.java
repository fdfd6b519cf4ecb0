package dev.sluice.internal;

import dev.sluice.Decision;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitProblem;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * What the HTTP filters (servlet, WebFlux) do with a request a rule matched, decided in one
 * place; each filter only renders the outcome on its stack: a request without a key (allow,
 * reject with 400, or limit under one shared key), a cost that cannot be computed, input the
 * limiter refuses, dry-run mode, and the answer to a decision (the rate-limit fields, then the
 * request passes, waits for its delay first, or gets the problem document: 429, or 503 when the
 * store is down and its policy refuses), with the counters both filters report.
 */
public final class FilterPolicy {
  /** The key a request without one is limited under with {@link MissingKey#SHARED}. */
  public static final String SHARED_KEY = "shared:no-key";

  private final RateLimitHeaders.Mode headers;
  private final MissingKey missingKey;
  private final boolean dryRun;
  private final System.Logger log;
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong wouldReject = new AtomicLong();
  private final AtomicLong unavailable = new AtomicLong();

  public FilterPolicy(RateLimitHeaders.Mode headers, MissingKey missingKey, boolean dryRun,
      System.Logger log) {
    this.headers = Objects.requireNonNull(headers, "headers");
    this.missingKey = Objects.requireNonNull(missingKey, "missingKey");
    this.dryRun = dryRun;
    this.log = Objects.requireNonNull(log, "log");
  }

  /** What to do with a request: pass it, answer a problem, or limit it (under a key). */
  public static final class Outcome {
    private static final Outcome PASS = new Outcome(null, null, null);

    private final RateLimitProblem problem;
    private final String key;
    private final Decision decision;

    private Outcome(RateLimitProblem problem, String key, Decision decision) {
      this.problem = problem;
      this.key = key;
      this.decision = decision;
    }

    /** The request goes on (after {@link #delayNanos()}, in queue mode); no problem, no key. */
    public boolean passes() {
      return problem == null && key == null;
    }

    /** The answer to send instead of passing the request on; null if it passes or is limited. */
    public RateLimitProblem problem() {
      return problem;
    }

    /** The key to limit the request under (a request without one); null otherwise. */
    public String key() {
      return key;
    }

    /** How long a passing request waits first (queue mode); 0 otherwise. */
    public long delayNanos() {
      return decision == null || problem != null ? 0 : decision.delayNanos();
    }
  }

  /** A request a rule matched has no key: pass it, refuse it (400), or limit it under one shared key. */
  public Outcome withoutKey(String method, String path, Object rule) {
    return switch (missingKey) {
      case ALLOW -> Outcome.PASS;
      case SHARED -> new Outcome(null, SHARED_KEY, null);
      case REJECT -> {
        if (dryRun) {
          log.log(System.Logger.Level.INFO, "dry run: {0} {1} has no rate-limit key and would be"
              + " refused", method, path);
          yield Outcome.PASS;
        }
        yield new Outcome(new RateLimitProblem(400, "Missing rate-limit key", "this request"
            + " carries no key that the rate limit of " + rule + " could be applied to"), null,
            null);
      }
    };
  }

  /** The answer when the rule's cost function threw. */
  public RateLimitProblem costFailed(RuntimeException e) {
    return new RateLimitProblem(400, "Invalid request cost", "the request's cost could not be"
        + " computed: " + e.getMessage());
  }

  /** The answer when the limiter refused the key or the cost. */
  public RateLimitProblem invalidInput(IllegalArgumentException e) {
    return new RateLimitProblem(400, "Invalid rate-limit input", e.getMessage());
  }

  /**
   * The answer to a decision. Dry run: the request passes, without fields, and a rejection is
   * counted and logged. Otherwise the rate-limit fields go to {@code header} first; then an
   * admitted request passes (after its delay, in queue mode) and a refused one gets its problem
   * document, counted as a rejection (429) or as unavailable (503).
   */
  public Outcome decided(Decision d, double cost, String method, String path, String key,
      BiConsumer<String, String> header) {
    if (dryRun) {
      if (!d.isAllowed()) {
        wouldReject.incrementAndGet();
        log.log(System.Logger.Level.INFO, "dry run: {0} {1} key {2} would be rejected ({3})",
            method, path, key, d);
      }
      return Outcome.PASS;
    }
    RateLimitProblem.writeHeaders(d, headers, header);
    if (d.isAllowed()) {
      return d.delayNanos() > 0 ? new Outcome(null, null, d) : Outcome.PASS;
    }
    (d.isUnavailable() ? unavailable : rejected).incrementAndGet();
    return new Outcome(RateLimitProblem.of(d, cost), null, d);
  }

  /** Requests answered 429 since start. */
  public long rejectedRequests() {
    return rejected.get();
  }

  /** Requests a dry run would have rejected (dry-run mode only). */
  public long dryRunRejections() {
    return wouldReject.get();
  }

  /** Requests answered 503 because the store was down and its policy refuses. */
  public long unavailableResponses() {
    return unavailable.get();
  }

  /**
   * A request's priority for the health shedder: what {@code priority} reads from it, or
   * {@code NORMAL} when it reads null or throws. Both HTTP filters ask it.
   */
  public static <Q> Priority priorityOf(Function<Q, Priority> priority, Q request) {
    try {
      Priority p = priority.apply(request);
      return p == null ? Priority.NORMAL : p;
    } catch (RuntimeException e) {
      return Priority.NORMAL;
    }
  }

  /** The answer to a request the health shedder refused: 503, naming the signal and its band. */
  public static RateLimitProblem shed(HealthShedder.Verdict verdict) {
    return new RateLimitProblem(503, "Service Unavailable", "shedding load: " + verdict.reason());
  }

  /**
   * The priority a request's header names: {@code critical} or {@code sheddable} (any case,
   * spaces around), anything else or none {@code NORMAL}. The starter's priority headers and the
   * service's {@code X-Priority} read it.
   */
  public static Priority priorityNamed(String header) {
    if (header == null) {
      return Priority.NORMAL;
    }
    return switch (header.trim().toLowerCase(Locale.ROOT)) {
      case "critical" -> Priority.CRITICAL;
      case "sheddable" -> Priority.SHEDDABLE;
      default -> Priority.NORMAL;
    };
  }
}

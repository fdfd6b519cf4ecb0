package dev.sluice.concurrency;

/**
 * What a {@link ConcurrencyLimiter} has done since it was built, read at one moment (each figure
 * is exact; figures read together may straddle a decision in flight). Meters read it
 * ({@code SluiceMetrics} in {@code sluice-micrometer}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public final class ConcurrencyStats {
  private final long acquired;
  private final long[] refused;
  private final long[] ended;
  private final long inFlight;
  private final long waiting;
  private final long keys;
  private final long storeErrors;
  private final long degraded;
  private final boolean circuitOpen;
  private final Levels levels;

  Levels levels() {
    return levels;
  }

  /** The figures by priority. */
  record Levels(long[] waiting, long[] dispatched, long[] refused, double[] flows) {}

  ConcurrencyStats(long acquired, long[] refused, long[] ended, long inFlight, long waiting,
      long keys, long storeErrors, long degraded, boolean circuitOpen, Levels levels) {
    this.acquired = acquired;
    this.refused = refused;
    this.ended = ended;
    this.inFlight = inFlight;
    this.waiting = waiting;
    this.keys = keys;
    this.storeErrors = storeErrors;
    this.degraded = degraded;
    this.circuitOpen = circuitOpen;
    this.levels = levels;
  }

  /** Permits acquired (degraded ones included). */
  public long acquired() {
    return acquired;
  }

  /** Acquisitions refused for {@code why}. */
  public long refused(Refusal why) {
    return refused[why.ordinal()];
  }

  /** Acquisitions refused, for every reason. */
  public long refused() {
    long n = 0;
    for (long r : refused) {
      n += r;
    }
    return n;
  }

  /** Permits that ended with {@code outcome}. */
  public long ended(Outcome outcome) {
    return ended[outcome.ordinal()];
  }

  /**
   * The weight of the permits this limiter granted that have not ended: in memory, every key's
   * weight in flight; on a store, what this JVM holds (a permit its holder never releases counts
   * until then, though the store lets it go when its lease ends).
   */
  public long inFlight() {
    return inFlight;
  }

  /** Acquisitions waiting now, on every key. */
  public long waiting() {
    return waiting;
  }

  /** Acquisitions of {@code priority} waiting now, on every key. */
  public long waiting(Priority priority) {
    return levels.waiting()[priority.ordinal()];
  }

  /** Waiters of {@code priority} given a permit (after waiting), on every key. */
  public long dispatched(Priority priority) {
    return levels.dispatched()[priority.ordinal()];
  }

  /** Acquisitions of {@code priority} refused, for every reason. */
  public long refused(Priority priority) {
    return levels.refused()[priority.ordinal()];
  }

  /**
   * Under {@link FairQueuing}: the flows of {@code priority} active within its memory, an
   * estimate summed over keys (each request counts its weight over its flow's remembered demand,
   * so a flow that asked n counts about once); 0 without fair queuing, and on a store for the
   * keys with waiters in this JVM. Its cardinality is the priorities', whatever the flows.
   */
  public double flows(Priority priority) {
    return levels.flows()[priority.ordinal()];
  }

  /** Keys held now (on a store: keys with waiters in this JVM). */
  public long keys() {
    return keys;
  }

  /** Calls to the store that failed (0 in memory). */
  public long storeErrors() {
    return storeErrors;
  }

  /** Answers the store failure policy gave (0 in memory). */
  public long degraded() {
    return degraded;
  }

  /** Whether a circuit breaker keeps calls away from the store now. */
  public boolean circuitOpen() {
    return circuitOpen;
  }

  @Override
  public String toString() {
    return "ConcurrencyStats[acquired " + acquired + ", refused " + refused() + ", in flight "
        + inFlight + ", waiting " + waiting + ", keys " + keys + ", store errors " + storeErrors
        + ", degraded " + degraded + (circuitOpen ? ", circuit open" : "") + "]";
  }
}

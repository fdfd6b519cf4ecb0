package dev.sluice.concurrency;

/**
 * A concurrency limit that follows the backend: it learns from the permits that end (their
 * latency, their outcome, how many were in flight when they started) and answers the limit to use
 * now. One instance serves one key (the limiter makes one per key from the factory it is given:
 * {@link ConcurrencyLimiter.Builder#adaptive}). Implementations are thread-safe; {@link #limit()}
 * is cheap, as it is read on every acquisition.
 *
 * <p>Sluice ships {@link AimdLimit} (additive increase, multiplicative decrease on drops or slow
 * windows) and {@link GradientLimit} (latency against a measured no-load baseline); see
 * {@code docs/concurrency.md} for how each reacts.
 */
public interface AdaptiveLimit {
  /** The limit now: at least 1. */
  int limit();

  /**
   * Learns from a permit that ended at {@code nowNanos} (the limiter's clock). Permits that
   * ended {@link Outcome#IGNORED} say nothing of the backend and should not move the limit;
   * {@link Outcome#DROPPED} and {@link Outcome#EXPIRED} are signs of overload.
   */
  void onEnd(PermitEnd end, long nowNanos);
}

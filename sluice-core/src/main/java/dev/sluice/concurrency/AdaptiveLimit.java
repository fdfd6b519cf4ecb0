package dev.sluice.concurrency;

import java.util.function.Supplier;

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
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#adaptive-limits-a-limit-that-follows-the-backend">docs/concurrency.md, "Adaptive limits: a limit that follows the backend"</a>.
 */
public interface AdaptiveLimit {
  /** The limit now: at least 1. */
  int limit();

  /**
   * The most {@link #limit()} can ever answer; a limiter refuses at once ({@code TOO_HEAVY}) a
   * weight above it, since no wait would serve it. The default says there is no such bound.
   */
  default int maxLimit() {
    return Integer.MAX_VALUE;
  }

  /**
   * The latency the algorithm believes the backend has with no queue, in nanoseconds, for a
   * meter; NaN when it keeps none (the default) or has not measured it yet.
   */
  default double noLoadLatencyNanos() {
    return Double.NaN;
  }

  /**
   * The factor the last window scaled the limit by for the latency it saw (1: no queue; below
   * 1: a queue), for a meter; NaN when the algorithm has none (the default) or before a window.
   */
  default double gradient() {
    return Double.NaN;
  }

  /**
   * Learns from a permit that ended at {@code nowNanos} (the limiter's clock). Permits that
   * ended {@link Outcome#IGNORED} say nothing of the backend and should not move the limit;
   * {@link Outcome#DROPPED} and {@link Outcome#EXPIRED} are signs of overload.
   */
  void onEnd(PermitEnd end, long nowNanos);

  /**
   * A factory of the algorithm configuration names ({@code gradient} or {@code aimd}) with its
   * defaults and these bounds, one limit per key, for {@link ConcurrencyLimiter.Builder#adaptive}:
   * what the Spring starter and the service build from their settings.
   *
   * @throws IllegalArgumentException naming an unknown algorithm
   */
  static Supplier<AdaptiveLimit> named(String algorithm, int min, int max, int initial) {
    return switch (algorithm) {
      case "gradient" -> () -> GradientLimit.builder().min(min).max(max).initial(initial).build();
      case "aimd" -> () -> AimdLimit.builder().min(min).max(max).initial(initial).build();
      default -> throw new IllegalArgumentException("an adaptive limit is gradient or aimd but"
          + " was '" + algorithm + "'");
    };
  }
}

package dev.sluice;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * When a store-backed limiter stops calling its store, and for how long. Immutable; each
 * {@code with...} returns a copy.
 *
 * <p>The breaker opens on evidence that the store is down, not on a few slow answers from a busy
 * host: after {@link #consecutiveUnavailable()} calls in a row that could not reach the store
 * (connection refused or lost, not connected), or when at least {@link #failureRate()} of the
 * calls in the last {@link #window()} failed for any reason (timeouts included) and there were at
 * least {@link #minimumCalls()} of them. Open, it answers with the failure policy for
 * {@link #openFor()} without calling the store, then lets one trial call through: success closes
 * it (and forgets the window), failure opens it again.
 *
 * <p>A store that spreads keys over nodes (a Redis Cluster) gets one breaker per node, so a dead
 * node degrades only the keys it owns.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#any-shared-store">docs/operations.md, "Any shared store"</a>.
 */
public final class CircuitBreakerSettings {
  private static final CircuitBreakerSettings DEFAULTS =
      new CircuitBreakerSettings(0.5, 20, Duration.ofSeconds(10), 3, Duration.ofMillis(500));

  private final double failureRate;
  private final int minimumCalls;
  private final Duration window;
  private final int consecutiveUnavailable;
  private final Duration openFor;

  private CircuitBreakerSettings(double failureRate, int minimumCalls, Duration window,
      int consecutiveUnavailable, Duration openFor) {
    this.failureRate = failureRate;
    this.minimumCalls = minimumCalls;
    this.window = window;
    this.consecutiveUnavailable = consecutiveUnavailable;
    this.openFor = openFor;
  }

  /** 50% of at least 20 calls in 10 s, or 3 unreachable in a row; open for 500 ms. */
  public static CircuitBreakerSettings defaults() {
    return DEFAULTS;
  }

  /** The share of failed calls in the window that opens the breaker, in (0, 1]. */
  public CircuitBreakerSettings withFailureRate(double rate) {
    if (!(rate > 0 && rate <= 1)) {
      throw new IllegalArgumentException("circuit breaker failureRate must be in (0, 1] but was " + rate);
    }
    return new CircuitBreakerSettings(rate, minimumCalls, window, consecutiveUnavailable, openFor);
  }

  /** The fewest calls in the window for the failure rate to count (at least 1). */
  public CircuitBreakerSettings withMinimumCalls(int calls) {
    if (calls < 1) {
      throw new IllegalArgumentException("circuit breaker minimumCalls must be at least 1 but was " + calls);
    }
    return new CircuitBreakerSettings(failureRate, calls, window, consecutiveUnavailable, openFor);
  }

  /** How far back the failure rate looks (10 ms to 1 hour). */
  public CircuitBreakerSettings withWindow(Duration window) {
    return new CircuitBreakerSettings(failureRate, minimumCalls,
        between("window", window, Duration.ofMillis(10), Duration.ofHours(1)),
        consecutiveUnavailable, openFor);
  }

  /** Calls in a row that could not reach the store before it opens (at least 1). */
  public CircuitBreakerSettings withConsecutiveUnavailable(int calls) {
    if (calls < 1) {
      throw new IllegalArgumentException("circuit breaker consecutiveUnavailable must be at least 1"
          + " but was " + calls);
    }
    return new CircuitBreakerSettings(failureRate, minimumCalls, window, calls, openFor);
  }

  /** How long it stays open before a trial call (1 ms to 1 hour). */
  public CircuitBreakerSettings withOpenFor(Duration open) {
    return new CircuitBreakerSettings(failureRate, minimumCalls, window, consecutiveUnavailable,
        between("openFor", open, Duration.ofMillis(1), Duration.ofHours(1)));
  }

  private static Duration between(String what, Duration d, Duration min, Duration max) {
    Objects.requireNonNull(d, what);
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw new IllegalArgumentException("circuit breaker " + what + " must be between "
          + Ticks.formatDuration(min) + " and " + Ticks.formatDuration(max) + " but was " + d);
    }
    return d;
  }

  public double failureRate() {
    return failureRate;
  }

  public int minimumCalls() {
    return minimumCalls;
  }

  public Duration window() {
    return window;
  }

  public int consecutiveUnavailable() {
    return consecutiveUnavailable;
  }

  public Duration openFor() {
    return openFor;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CircuitBreakerSettings s && s.failureRate == failureRate
        && s.minimumCalls == minimumCalls && s.window.equals(window)
        && s.consecutiveUnavailable == consecutiveUnavailable && s.openFor.equals(openFor);
  }

  @Override
  public int hashCode() {
    return Objects.hash(failureRate, minimumCalls, window, consecutiveUnavailable, openFor);
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "CircuitBreakerSettings[%s%% of >= %d calls in %s, or %d"
        + " unreachable in a row; open %s]", failureRate * 100, minimumCalls,
        Ticks.formatDuration(window), consecutiveUnavailable, Ticks.formatDuration(openFor));
  }
}

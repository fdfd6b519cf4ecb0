package dev.sluice.internal;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Clock;
import dev.sluice.spi.StoreUnavailableException;
import java.util.Collection;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The circuit breakers of one limiter on a store: one for a store that is a single failure
 * domain, and one per domain, made on first use, for a store that spreads keys over nodes that
 * fail on their own (a Redis Cluster). The rate and the concurrency limiters on stores share it.
 * Not API. Thread-safe.
 */
public final class Breakers {
  private final CircuitBreakerSettings settings;
  private final Clock clock;
  private final CircuitBreaker whole;
  private final ConcurrentHashMap<Object, CircuitBreaker> domains = new ConcurrentHashMap<>();

  public Breakers(CircuitBreakerSettings settings, Clock clock) {
    this.settings = settings;
    this.clock = clock;
    this.whole = new CircuitBreaker(settings, clock);
  }

  /** The breaker of {@code domain}; null is the whole store's. */
  public CircuitBreaker of(Object domain) {
    if (domain == null) {
      return whole;
    }
    CircuitBreaker b = domains.get(domain);
    return b != null ? b : domains.computeIfAbsent(domain, d -> new CircuitBreaker(settings, clock));
  }

  /** The whole store's breaker. */
  public CircuitBreaker whole() {
    return whole;
  }

  /** The breakers of the domains met so far. */
  public Collection<CircuitBreaker> domains() {
    return domains.values();
  }

  /** Whether any breaker is open now. */
  public boolean anyOpen() {
    if (whole.isOpen()) {
      return true;
    }
    for (CircuitBreaker b : domains.values()) {
      if (b.isOpen()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Counts a failed call on {@code b}: an unreachable store ({@link StoreUnavailableException},
   * unwrapped from a {@link CompletionException}) counts towards opening at once.
   */
  public static void failed(CircuitBreaker b, Throwable failure) {
    b.failure(cause(failure) instanceof StoreUnavailableException);
  }

  /** What an asynchronous call failed with: the cause of a {@link CompletionException}. */
  public static Throwable cause(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }
}

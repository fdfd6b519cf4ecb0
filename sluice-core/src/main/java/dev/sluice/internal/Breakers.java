package dev.sluice.internal;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Clock;
import dev.sluice.spi.StoreUnavailableException;
import java.util.Collection;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How a limiter on a store meets its store's failures, written once for the rate and the
 * concurrency limiters on stores: the circuit breakers (one for a store that is a single failure
 * domain, and one per domain, made on first use, for a store that spreads keys over nodes that
 * fail on their own: a Redis Cluster), the breaker of a key's domain as the store names it, the
 * count of failed store calls (each also told to its breaker), and the count of degraded answers
 * (the failure policy's). Not API. Thread-safe.
 */
public final class Breakers {
  private final CircuitBreakerSettings settings;
  private final Clock clock;
  private final CircuitBreaker whole;
  private final ConcurrentHashMap<Object, CircuitBreaker> domains = new ConcurrentHashMap<>();
  private final AtomicLong storeErrors = new AtomicLong();
  private final AtomicLong degraded = new AtomicLong();

  /** A store's name for a key's failure domain; it may throw (then: the whole store's). */
  @FunctionalInterface
  public interface Domain {
    Object of(String key);
  }

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

  /**
   * The breaker of {@code key}'s failure domain as {@code domain} names it; a store that fails to
   * name it gets the whole store's.
   */
  public CircuitBreaker of(Domain domain, String key) {
    Object d;
    try {
      d = domain.of(key);
    } catch (RuntimeException e) {
      d = null;
    }
    return of(d);
  }

  /** A store call failed: counted, and told to {@code b} ({@link #failed(CircuitBreaker, Throwable)}). */
  public void callFailed(CircuitBreaker b, Throwable failure) {
    storeErrors.incrementAndGet();
    failed(b, failure);
  }

  /** Store calls that failed since start. */
  public long storeErrors() {
    return storeErrors.get();
  }

  /** A degraded answer (the failure policy's) was given: counted. */
  public void degradedAnswer() {
    degraded.incrementAndGet();
  }

  /** Degraded answers given since start. */
  public long degradedAnswers() {
    return degraded.get();
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

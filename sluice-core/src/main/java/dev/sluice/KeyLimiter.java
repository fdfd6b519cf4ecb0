package dev.sluice;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link RateLimiter} bound to one key, from {@link RateLimiter#forKey(String)}: the limiter's
 * own decisions on that key, without naming the key at each call.
 *
 * <p>For a key decided often: a global limit, the one downstream a client calls, an endpoint. An
 * in-memory limiter of a single bucket keeps the key's state at hand and skips the lookup of the
 * key that every keyed call makes; every other limiter forwards each call to its keyed method, so
 * a bound limiter decides exactly what the keyed call decides, with the same state, on any store.
 * It is as thread-safe as its limiter and can be shared by any number of threads. It keeps no key
 * alive: an idle key still expires, and a key reset or evicted starts empty again, whichever way
 * it is called.
 *
 * <pre>{@code
 * KeyLimiter downstream = limiter.forKey("payments-api");
 * if (downstream.tryAcquire().isAllowed()) { ... }
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#operations">docs/semantics.md, "Operations"</a>.
 */
public interface KeyLimiter {

  /** The key every call decides on. */
  String key();

  /** The limiter this is bound to. */
  RateLimiter limiter();

  /** {@link #tryAcquire(double)} with cost 1. */
  default Decision tryAcquire() {
    return tryAcquire(1);
  }

  /** {@link RateLimiter#tryAcquire(String, double)} on the bound key. */
  default Decision tryAcquire(double cost) {
    return limiter().tryAcquire(key(), cost);
  }

  /** {@link RateLimiter#tryAcquireAsync(String, double)} on the bound key. */
  default CompletableFuture<Decision> tryAcquireAsync(double cost) {
    return limiter().tryAcquireAsync(key(), cost);
  }

  /** {@link #check(double)} with cost 1. */
  default Decision check() {
    return check(1);
  }

  /** {@link RateLimiter#check(String, double)} on the bound key: changes nothing. */
  default Decision check(double cost) {
    return limiter().check(key(), cost);
  }

  /**
   * {@link RateLimiter#reserve(String, double)} on the bound key.
   *
   * @throws UnsupportedOperationException if a limit is a window algorithm (it has no leak rate)
   */
  default Decision reserve(double cost) {
    return limiter().reserve(key(), cost);
  }

  /**
   * {@link RateLimiter#acquire(String, double, Duration)} on the bound key.
   *
   * @throws InterruptedException if interrupted while waiting; nothing has been charged then
   */
  default Decision acquire(double cost, Duration timeout) throws InterruptedException {
    return limiter().acquire(key(), cost, timeout);
  }

  /** {@link RateLimiter#reset(String)} of the bound key. */
  default void reset() {
    limiter().reset(key());
  }
}

package dev.sluice;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Per-key rate limiting under one set of {@link Limit limits}.
 *
 * <p>Every operation on a key is one atomic step: with several limits, all must admit and none
 * is charged unless all admit. Implementations are thread-safe. Keys are non-empty strings; costs
 * are positive finite numbers (fractional allowed, default 1). A cost above a capacity is not an
 * error: the decision says it can never be admitted. Bad arguments throw
 * {@link IllegalArgumentException} (or {@link NullPointerException} for nulls) naming the value.
 *
 * <p>Create one with {@link Sluice#builder()}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#operations">docs/semantics.md, "Operations"</a>.
 */
public interface RateLimiter extends AutoCloseable {

  /** {@link #tryAcquire(String, double)} with cost 1. */
  default Decision tryAcquire(String key) {
    return tryAcquire(key, 1);
  }

  /**
   * The meter: admits iff the cost fits every limit now ({@code L(now) + c <= C}), and then
   * charges it; a rejection changes nothing (except starting a configured penalty).
   */
  Decision tryAcquire(String key, double cost);

  /**
   * {@link #tryAcquire(String, double)} without blocking on a shared store's round trip. In
   * memory the answer is immediate.
   */
  default CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
    return CompletableFuture.completedFuture(tryAcquire(key, cost));
  }

  /** {@link #check(String, double)} with cost 1. */
  default Decision check(String key) {
    return check(key, 1);
  }

  /** The answer {@link #tryAcquire(String, double)} would give now, changing nothing. */
  Decision check(String key, double cost);

  /**
   * {@link #check(String, double)} without blocking on a shared store's round trip. In memory
   * the answer is immediate.
   */
  default CompletableFuture<Decision> checkAsync(String key, double cost) {
    return CompletableFuture.completedFuture(check(key, cost));
  }

  /**
   * {@link #fillUp(String, double)} without blocking on a shared store's round trip. In memory
   * the answer is immediate.
   */
  default CompletableFuture<Decision> fillUpAsync(String key, double cost) {
    return CompletableFuture.completedFuture(fillUp(key, cost));
  }

  /**
   * Adds the cost unconditionally, clamped at capacity ({@code L = min(C, L + c)}), and reports
   * whether capacity was reached at this instant ({@link Decision#reachedCapacity()}).
   */
  Decision fillUp(String key, double cost);

  /** {@link #reserve(String, double)} with cost 1. */
  default Decision reserve(String key) {
    return reserve(key, 1);
  }

  /**
   * The queue (shaper): admits iff the queue has room, and returns in
   * {@link Decision#delayNanos()} how long to wait before proceeding so that admitted work leaves
   * at exactly the leak rate. Rejects when the queue is full.
   *
   * @throws UnsupportedOperationException if a limit is a window algorithm (it has no leak rate)
   */
  Decision reserve(String key, double cost);

  /**
   * {@link #reserve(String, double)} without blocking on a shared store's round trip: the
   * queue's decision, whose {@link Decision#delayNanos()} the caller waits out on no thread (a
   * reactive timer). In memory the answer is immediate.
   *
   * @throws UnsupportedOperationException if a limit is a window algorithm (it has no leak rate)
   */
  default CompletableFuture<Decision> reserveAsync(String key, double cost) {
    return CompletableFuture.completedFuture(reserve(key, cost));
  }

  /**
   * Blocks until the cost is admitted or {@code timeout} has passed. Fails at once, without
   * waiting, when the wait the limiter can already foresee exceeds the timeout (or the cost can
   * never be admitted). Returns the last decision: admitted, or the rejection.
   *
   * @throws InterruptedException if interrupted while waiting; nothing has been charged then
   */
  Decision acquire(String key, double cost, Duration timeout) throws InterruptedException;

  /**
   * The asynchronous twin of {@link #acquire}: holds no thread while waiting. The future completes
   * with the admitting decision or the final rejection; cancelling it stops the waiting.
   */
  CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout);

  /**
   * This limiter bound to one key: the same decisions on that key without naming it at each call
   * (see {@link KeyLimiter}). The default forwards every call to the keyed methods; the in-memory
   * limiter of a single bucket skips the key's lookup.
   *
   * @throws NullPointerException if the key is null
   * @throws IllegalArgumentException if the key is empty
   */
  default KeyLimiter forKey(String key) {
    return new ForwardingKeyLimiter(this, key);
  }

  /** Forgets a key: its next request finds empty buckets and no windows. */
  void reset(String key);

  /** The limits every key is held to, in the order configured. */
  List<Limit> limits();

  /** Counters since the limiter was built: store errors, degraded decisions, evictions. */
  LimiterStats stats();

  /**
   * Stops the limiter's background work and gives back what it holds: in fleet mode
   * ({@link Sluice.Builder#leases}), every unspent lease is returned to the shared bucket. It
   * never closes a store given to the builder. Idempotent; the default does nothing (an
   * in-memory limiter or a limiter without leases holds nothing to give back). A closed fleet
   * limiter keeps answering, with one store call per decision.
   */
  @Override
  default void close() {}
}

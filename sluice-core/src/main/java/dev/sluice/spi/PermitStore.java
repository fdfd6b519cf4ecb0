package dev.sluice.spi;

import java.util.concurrent.CompletableFuture;

/**
 * A place where per-key permits in flight live outside the JVM (Redis, PostgreSQL): the narrow
 * contract behind a {@link dev.sluice.concurrency.ConcurrencyLimiter} shared by a fleet. The
 * concurrency side of the SPI, as {@link DecisionStore} is the rate side; a store may implement
 * both.
 *
 * <p>A key holds permits, each with an id (unique per key, chosen by the caller), a weight and a
 * lease that ends at an instant of the store's own clock. Each method is one atomic step on that
 * clock that first forgets the key's permits whose lease has ended (at or before now), and then:
 *
 * <ul>
 *   <li>{@link #acquire}: adds the permit, leased until now plus {@code leaseMillis}, if the
 *       weight in flight plus its weight is at most {@code ceiling}; a permit already held under
 *       the same id is left as it is and answered as acquired (a resent call takes nothing
 *       twice);</li>
 *   <li>{@link #renew}: moves the lease of a permit still held to now plus {@code leaseMillis};</li>
 *   <li>{@link #release}: forgets a permit still held;</li>
 *   <li>{@link #cancel}: gives back a permit whose acquire its caller stopped waiting for (the
 *       call failed or timed out, so it may have run, may run later, or may never run): forgets
 *       the permit if it is held, and otherwise remembers the id, weighing nothing, until now
 *       plus {@code leaseMillis}, so that the acquire, should it reach the store after the
 *       cancel, takes nothing. Whatever order the two calls reach the store in, the permit is
 *       held at most from the acquire to the cancel.</li>
 * </ul>
 *
 * <p>Each answers with the weight in flight after the step (after a release it may still count
 * leases that ended and that no acquire has dropped yet) and the store's clock. The key's
 * record expires by itself once its last lease has ended: an idle key costs nothing. Ids and keys
 * come checked (non-empty, well-formed Unicode without U+0000, at most 1,024 bytes of UTF-8); the conformance suite in {@code sluice-testkit} checks the
 * rest. Implementations are thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public interface PermitStore extends AutoCloseable {
  /** Takes a permit if it fits under {@code ceiling}; see the class comment. */
  PermitReply acquire(String key, String permitId, int weight, int ceiling, long leaseMillis);

  /**
   * {@link #acquire} without blocking the caller (a limiter's waiters retry through it from a
   * scheduler thread); the default runs it on the calling thread, so a store whose calls block
   * should override it. A failure completes the future exceptionally.
   */
  default CompletableFuture<PermitReply> acquireAsync(String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    try {
      return CompletableFuture.completedFuture(acquire(key, permitId, weight, ceiling,
          leaseMillis));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Extends a permit still held to now plus {@code leaseMillis}; done is false if it is not. */
  PermitReply renew(String key, String permitId, int weight, long leaseMillis);

  /** Forgets a permit still held; done is false if it was not (released, or its lease ended). */
  PermitReply release(String key, String permitId, int weight);

  /**
   * {@link #release} without blocking the caller (a reactive application releases from an event
   * loop); the default runs it on the calling thread, so a store whose calls block should
   * override it. A failure completes the future exceptionally.
   */
  default CompletableFuture<PermitReply> releaseAsync(String key, String permitId, int weight) {
    try {
      return CompletableFuture.completedFuture(release(key, permitId, weight));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Gives back the permit of an acquire whose answer its caller did not get: forgets it if held,
   * else remembers {@code permitId} until now plus {@code leaseMillis} so that a later acquire of
   * that id takes nothing (see the class comment). Done is true if a held permit was forgotten.
   * Repeating it is harmless.
   */
  PermitReply cancel(String key, String permitId, int weight, long leaseMillis);

  /**
   * {@link #cancel} without blocking the caller; the default runs it on the calling thread, so a
   * store whose calls block should override it. A failure completes the future exceptionally.
   */
  default CompletableFuture<PermitReply> cancelAsync(String key, String permitId, int weight,
      long leaseMillis) {
    try {
      return CompletableFuture.completedFuture(cancel(key, permitId, weight, leaseMillis));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The key's weight in flight now (leases ended not counted). */
  int inFlight(String key);

  /** Forgets every permit of the key. */
  void resetPermits(String key);

  /**
   * Which part of the store holds the key's permits (a Redis Cluster's node), for a breaker per
   * part; {@code null} (the default) means one domain for the whole store. Cheap: asked on every
   * call. A decorating store must forward it, as for {@link DecisionStore#failureDomain}.
   */
  default Object permitFailureDomain(String key) {
    return null;
  }

  // ------------------------------------------------------------------------------ groups

  /**
   * Whether this store keeps grouped permits ({@link PermitGroup}); the grouped methods below
   * throw {@link UnsupportedOperationException} when it does not (the default).
   */
  default boolean supportsPermitGroups() {
    return false;
  }

  /**
   * {@link #acquire} for a key of a group: one atomic step on the store's clock that drops the
   * ended leases of the group's keys, and adds the permit to the key and to the group if it fits
   * {@code ceiling} and the group's terms (see {@link PermitGroup}). The key's permits in a
   * group are apart from its permits outside any group. The reply's in flight is the key's.
   */
  default PermitReply acquire(PermitGroup group, String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** {@link #acquire(PermitGroup, String, String, int, int, long)} without blocking the caller. */
  default CompletableFuture<PermitReply> acquireAsync(PermitGroup group, String key,
      String permitId, int weight, int ceiling, long leaseMillis) {
    try {
      return CompletableFuture.completedFuture(acquire(group, key, permitId, weight, ceiling,
          leaseMillis));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #renew} for a key of the group {@code group}. */
  default PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** {@link #release} for a key of the group {@code group}: the permit leaves both. */
  default PermitReply release(String group, String key, String permitId, int weight) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** {@link #release(String, String, String, int)} without blocking the caller. */
  default CompletableFuture<PermitReply> releaseAsync(String group, String key, String permitId,
      int weight) {
    try {
      return CompletableFuture.completedFuture(release(group, key, permitId, weight));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #cancel} for a key of the group {@code group}: the permit leaves both, if held. */
  default PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** {@link #cancel(String, String, String, int, long)} without blocking the caller. */
  default CompletableFuture<PermitReply> cancelAsync(String group, String key, String permitId,
      int weight, long leaseMillis) {
    try {
      return CompletableFuture.completedFuture(cancel(group, key, permitId, weight, leaseMillis));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * The weight in flight now of {@code key} in {@code group}, or of the whole group when
   * {@code key} is null (leases ended not counted).
   */
  default int inFlight(String group, String key) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** Forgets every permit of {@code key} in {@code group} (of the whole group if key is null). */
  default void resetPermits(String group, String key) {
    throw new UnsupportedOperationException(this + " keeps no permit groups");
  }

  /** Which part of the store holds the group's permits (see {@link #permitFailureDomain}). */
  default Object groupPermitFailureDomain(String group) {
    return null;
  }

  /** Releases what the store holds (connections); the default does nothing. */
  @Override
  default void close() {}
}

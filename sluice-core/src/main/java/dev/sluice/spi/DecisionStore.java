package dev.sluice.spi;

import java.util.concurrent.CompletableFuture;

/**
 * A place where per-key state lives outside the JVM (Redis, PostgreSQL): the narrow contract a
 * store implements; every user-facing feature is built once, in core, on top of it.
 *
 * <p>{@link #apply} must, as one atomic step on the store's own clock: read the key's state (the
 * request's {@link StoreRequest#initialState() initial state} if absent or of another
 * {@link StoreRequest#layout() layout}), compute the next state exactly as described in
 * {@code docs/semantics.md} (the reference is core's engine, and the conformance suite checks
 * it), write it only if it changed, make the key expire when it becomes idle, and return the clock
 * reading and the state it read. Core derives the decision and all its figures from that.
 *
 * <p>Implementations are thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public interface DecisionStore extends AutoCloseable {
  /** Ticks per second of the store's clock: 1,000,000 for microseconds. */
  long ticksPerSecond();

  /** Applies one operation atomically; see the class comment. */
  Observation apply(String key, StoreRequest request);

  /**
   * {@link #apply} without blocking the caller; the default runs it on the calling thread, so a
   * store whose calls block should override it (fleet mode sends its lease calls here from
   * request threads, which must not wait). A failure completes the future exceptionally.
   */
  default CompletableFuture<Observation> applyAsync(String key,
      StoreRequest request) {
    try {
      return CompletableFuture.completedFuture(apply(key, request));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Whether core should combine one JVM's {@code tryAcquire} calls on one key: while a call on
   * the key is in flight, those that arrive for the same cost wait and then go as one
   * {@link StoreProtocol.Operation#LEASE lease} of as many grains, decided at one reading of the
   * store's clock exactly as the same calls one after the other would be (limits of buckets
   * without a penalty only; others are never combined). Worth it where a call is costly and calls
   * on one key are serial anyway (SQL databases, whose row or lock serializes them); the default,
   * false, sends every call. A batch goes through {@link #applyAsync}, which a store that
   * combines must implement without blocking its caller (the caller that ends a call sends the
   * batch behind it). A decorating store must forward it.
   */
  default boolean combinesDecisions() {
    return false;
  }

  /**
   * Whether this store decides groups ({@link #applyGroup}); a limiter of a group refuses, at
   * build, a store that does not. The default is false.
   */
  default boolean supportsGroups() {
    return false;
  }

  /**
   * A {@link StoreRequest#isGroup() group's} decision, as one atomic step on the store's clock:
   * reads the state of {@code key} in {@code group} (layout {@link StoreRequest#keyLayout()}) and
   * of the group's parent (layout {@link StoreRequest#groupLayout()}), computes the next state
   * of both as core's reference does, writes each that changed, makes each expire when idle, and
   * returns the clock reading and the key's slots followed by the parent's. A key's state in a
   * group is its own: it is not the state {@link #apply} keeps under the same key.
   *
   * @throws UnsupportedOperationException if the store cannot decide groups (the default)
   */
  default Observation applyGroup(String group, String key, StoreRequest request) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " cannot decide groups (hierarchical limits)");
  }

  /** {@link #applyGroup} without blocking the caller; the default runs it on the calling thread. */
  default CompletableFuture<Observation> applyGroupAsync(String group,
      String key, StoreRequest request) {
    try {
      return CompletableFuture.completedFuture(applyGroup(group, key, request));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Forgets {@code key}'s state in {@code group}; the group's parent keeps what it holds. */
  default void resetGroupMember(String group, String key) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " cannot decide groups (hierarchical limits)");
  }

  /** Forgets a key. */
  void reset(String key);

  /**
   * Which part of the store holds the key, for stores that spread keys over nodes that fail on
   * their own (a Redis Cluster: the node that owns the key's slot now). A limiter keeps one
   * circuit breaker per failure domain, so a dead node degrades only its own keys. The default,
   * {@code null}, means one domain for the whole store. Must be cheap: it is asked on every call.
   *
   * <p>A store that decorates another (a key prefix, metrics, tracing) must forward this and
   * {@link #groupFailureDomain} to the store it wraps, with the key it passes on: left to the
   * default, every key falls in one domain, and one dead Cluster node opens the breaker for the
   * keys of every node. Sluice's own key-prefixing decorator forwards both.
   */
  default Object failureDomain(String key) {
    return null;
  }

  /**
   * {@link #failureDomain} for a group: which part of the store holds the group's keys (in a
   * Redis Cluster, the node of the group's slot). The default, {@code null}, means one domain.
   */
  default Object groupFailureDomain(String group) {
    return null;
  }

  /**
   * Fleet mode ({@code Sluice.Builder.leases}): records, on the store's clock, that
   * {@code instance} of {@code fleet} is alive for {@code ttlMillis} from now, and returns how
   * many instances of that fleet are alive, this one included. Fleet-mode limiters call it every
   * half lease lifetime; the count divides each instance's share of the bound. The default cannot
   * count and returns -1 (the limiter then assumes the instances it was told).
   */
  default CompletableFuture<Integer> liveInstances(String fleet,
      String instance, long ttlMillis) {
    return CompletableFuture.completedFuture(-1);
  }

  /**
   * Checks that the store answers, within its timeout, without touching any key's state (for
   * readiness probes: it is not a decision and counts as none). The default does nothing.
   *
   * @throws RuntimeException if the store does not answer
   */
  default void ping() {}

  /** Releases what the store holds (connections); the default does nothing. */
  @Override
  default void close() {}
}

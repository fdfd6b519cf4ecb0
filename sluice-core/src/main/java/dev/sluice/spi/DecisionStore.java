package dev.sluice.spi;

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
 */
public interface DecisionStore extends AutoCloseable {
  /** Ticks per second of the store's clock: 1,000,000 for microseconds. */
  long ticksPerSecond();

  /** Applies one operation atomically; see the class comment. */
  Observation apply(String key, StoreRequest request);

  /** Forgets a key. */
  void reset(String key);

  /** Releases what the store holds (connections); the default does nothing. */
  @Override
  default void close() {}
}

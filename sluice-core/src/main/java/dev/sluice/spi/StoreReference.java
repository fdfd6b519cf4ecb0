package dev.sluice.spi;

import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.internal.EngineAccess;
import dev.sluice.spi.StoreProtocol.Operation;
import java.util.List;

/**
 * Limits compiled for a store's clock, and the state transitions a store must reproduce bit for
 * bit: what {@link StoreRequest} a decision sends, and which state the store must keep after
 * applying it. For store implementers' tests; Sluice's own stores replay thousands of golden
 * vectors made from it. Using Sluice does not need it.
 *
 * <p>A store keeps {@link #next} when it differs from the state it read, deletes the key when
 * {@link #idleAfter} of that state is 0, and otherwise lets it expire after that many ticks.
 * Immutable and thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public final class StoreReference {
  private final EngineAccess.Reference engine;

  private StoreReference(EngineAccess.Reference engine) {
    this.engine = engine;
  }

  /**
   * The limits compiled for a store whose clock ticks {@code ticksPerSecond} times a second.
   *
   * @throws IllegalArgumentException if a limit cannot be represented on such a store
   */
  public static StoreReference of(List<Limit> limits, long ticksPerSecond) {
    return new StoreReference(EngineAccess.factory().of(limits, ticksPerSecond));
  }

  /**
   * A group's limits (assured, ceilings, parent) compiled for a store whose clock ticks
   * {@code ticksPerSecond} times a second: its requests are {@link StoreRequest#isGroup() group
   * requests}.
   *
   * @throws IllegalArgumentException if a limit cannot be represented on such a store
   * @throws IllegalStateException if the group has no assured limit
   */
  public static StoreReference ofGroup(Group group, long ticksPerSecond) {
    return new StoreReference(EngineAccess.factory().ofGroup(group, ticksPerSecond));
  }

  /** Whether these are a group's limits. */
  public boolean isGroup() {
    return engine.isGroup();
  }

  /** The request a decision of {@code operation} for {@code cost} sends to the store. */
  public StoreRequest request(Operation operation, double cost) {
    return engine.request(operation, cost);
  }

  /**
   * The request of {@code operation} for {@code cost}, with {@code count} grains of it for a
   * lease or a release.
   */
  public StoreRequest request(Operation operation, double cost, long count) {
    return engine.request(operation, cost, count);
  }

  /** The limits' layout letters, e.g. "bs". */
  public String layout() {
    return engine.layout();
  }

  /** The state of a key nobody has touched. */
  public long[] initialState() {
    return engine.initialState();
  }

  /**
   * The state to keep after {@code operation} for {@code cost} at {@code now} (ticks) on
   * {@code state}.
   *
   * @throws UnsupportedOperationException for reserve on limits without a leak rate
   */
  public long[] next(long[] state, long now, Operation operation, double cost) {
    return engine.next(state, now, operation, cost);
  }

  /** As {@link #next(long[], long, Operation, double)}, for {@code count} grains. */
  public long[] next(long[] state, long now, Operation operation, double cost, long count) {
    return engine.next(state, now, operation, cost, count);
  }

  /**
   * The state to keep after applying {@code request} on {@code state} at {@code now} (ticks):
   * what a store's atomic step computes. The request must have been made for these limits.
   *
   * @throws IllegalArgumentException if the request's layout is not these limits'
   */
  public long[] next(long[] state, long now, StoreRequest request) {
    return engine.next(state, now, request);
  }

  /**
   * The grains a lease of {@code want} grains of {@code cost} is granted on {@code state} at
   * {@code now}: as many as every limit holds room for.
   */
  public long granted(long[] state, long now, double cost, long want) {
    return engine.granted(state, now, cost, want);
  }

  /** The decision core builds from what the store saw: its clock and the state before. */
  public Decision decision(long[] stateBefore, long now, Operation operation, double cost) {
    return engine.decision(stateBefore, now, operation, cost);
  }

  /** Ticks until {@code state} holds nothing at {@code now}; 0 when the key is idle. */
  public long idleAfter(long[] state, long now) {
    return engine.idleAfter(state, now);
  }

  /**
   * A group's state: ticks until the key's part of it (the slots before the parent's) holds
   * nothing; 0 when idle.
   */
  public long keyIdleAfter(long[] state, long now) {
    return engine.keyIdleAfter(state, now);
  }

  /** A group's state: ticks until the parent's part of it holds nothing; 0 when idle. */
  public long groupIdleAfter(long[] state, long now) {
    return engine.groupIdleAfter(state, now);
  }
}

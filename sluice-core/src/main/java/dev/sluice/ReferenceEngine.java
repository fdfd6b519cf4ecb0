package dev.sluice;

import dev.sluice.spi.StoreProtocol.Kind;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.internal.EngineAccess;
import dev.sluice.spi.StoreRequest;
import java.util.List;
import java.util.Objects;

/**
 * The engine behind {@link dev.sluice.spi.StoreReference}: limits compiled for a store's clock,
 * the requests decisions send and the states stores must keep. Core's store limiters use it
 * directly; users reach it through the SPI's facade.
 */
final class ReferenceEngine implements EngineAccess.Reference {
  private final CompiledLimit[] compiled;
  private final Kind[] kinds;
  private final long[] capacity;
  private final long[] window;
  private final long[] penalty;
  private final long[] scale;
  private final String layout;
  /** A group's compiled limits; null for plain limits. */
  private final GroupLimits group;

  private ReferenceEngine(List<Limit> limits, long ticksPerSecond) {
    this(limits, ticksPerSecond, null);
  }

  private ReferenceEngine(List<Limit> limits, long ticksPerSecond, GroupLimits group) {
    this.group = group;
    if (ticksPerSecond <= 0 || 1_000_000_000L % ticksPerSecond != 0) {
      throw new IllegalArgumentException(
          "a store's ticksPerSecond must divide 1e9 but was " + ticksPerSecond);
    }
    int n = limits.size();
    compiled = new CompiledLimit[n];
    kinds = new Kind[n];
    capacity = new long[n];
    window = new long[n];
    penalty = new long[n];
    scale = new long[n];
    for (int i = 0; i < n; i++) {
      CompiledLimit c = Objects.requireNonNull(limits.get(i), "limit").compile(ticksPerSecond);
      compiled[i] = c;
      kinds[i] = Kind.of(c.kind);
      capacity[i] = c.capacity;
      window[i] = c.window;
      penalty[i] = c.penalty;
      scale[i] = c.scale;
    }
    layout = StoreRequest.layout(kinds, scale);
  }

  /**
   * The limits compiled for a store whose clock ticks {@code ticksPerSecond} times a second.
   *
   * @throws IllegalArgumentException if a limit cannot be represented on such a store
   */
  static ReferenceEngine of(List<Limit> limits, long ticksPerSecond) {
    if (limits.isEmpty()) {
      throw new IllegalArgumentException("at least one limit is needed");
    }
    return new ReferenceEngine(List.copyOf(limits), ticksPerSecond);
  }

  /**
   * A group's limits (assured, ceilings, parent) compiled for a store whose clock ticks
   * {@code ticksPerSecond} times a second: its requests are {@link StoreRequest#isGroup() group
   * requests}.
   *
   * @throws IllegalArgumentException if a limit cannot be represented on such a store
   * @throws IllegalStateException if the group has no assured limit
   */
  static ReferenceEngine ofGroup(Group group, long ticksPerSecond) {
    Objects.requireNonNull(group, "group");
    if (ticksPerSecond <= 0 || 1_000_000_000L % ticksPerSecond != 0) {
      throw new IllegalArgumentException(
          "a store's ticksPerSecond must divide 1e9 but was " + ticksPerSecond);
    }
    return new ReferenceEngine(group.limits(), ticksPerSecond,
        new GroupLimits(group, ticksPerSecond));
  }

  /** Whether these are a group's limits. */
  @Override
  public boolean isGroup() {
    return group != null;
  }

  /** The request a decision of {@code operation} for {@code cost} sends to the store. */
  @Override
  public StoreRequest request(Operation operation, double cost) {
    return request(operation, cost, 1);
  }

  /**
   * The request of {@code operation} for {@code cost}, with {@code count} grains of it for a
   * lease or a release.
   */
  @Override
  public StoreRequest request(Operation operation, double cost, long count) {
    long[] quantum = new long[compiled.length];
    for (int i = 0; i < compiled.length; i++) {
      quantum[i] = compiled[i].quantum(cost);
    }
    return group == null
        ? StoreRequest.of(operation, kinds, capacity, window, penalty, quantum, scale, layout, count)
        : StoreRequest.ofGroup(operation, kinds, capacity, window, penalty, quantum, scale, layout,
            count, group.reserve);
  }

  /** The limits' layout letters, e.g. "bs". */
  @Override
  public String layout() {
    return layout;
  }

  /** The state of a key nobody has touched. */
  @Override
  public long[] initialState() {
    return Engine.initialState(compiled);
  }

  /**
   * The state to keep after {@code operation} for {@code cost} at {@code now} (ticks) on
   * {@code state}.
   *
   * @throws UnsupportedOperationException for reserve on limits without a leak rate
   */
  @Override
  public long[] next(long[] state, long now, Operation operation, double cost) {
    return next(state, now, operation, cost, 1);
  }

  /** As {@link #next(long[], long, Operation, double)}, for {@code count} grains. */
  @Override
  public long[] next(long[] state, long now, Operation operation, double cost, long count) {
    long[] next = new long[state.length];
    if (group != null) {
      group.decide(state, now, operation.code(), group.quanta(cost), next);
    } else {
      Engine.decide(compiled, state, now, operation.code(), cost, count, next);
    }
    return next;
  }

  /**
   * The state to keep after applying {@code request} on {@code state} at {@code now} (ticks):
   * what a store's atomic step computes. The request must have been made for these limits.
   *
   * @throws IllegalArgumentException if the request's layout is not these limits'
   */
  @Override
  public long[] next(long[] state, long now, StoreRequest request) {
    if (!request.layout().equals(layout) || request.limits() != compiled.length
        || request.isGroup() != (group != null)) {
      throw new IllegalArgumentException("a " + (request.isGroup() ? "group's " : "")
          + "request of layout '" + request.layout() + "' does not belong to "
          + (group != null ? "a group's " : "") + "limits of layout '" + layout + "'");
    }
    long[] quanta = new long[compiled.length];
    for (int i = 0; i < quanta.length; i++) {
      quanta[i] = request.quantum(i);
    }
    long[] next = new long[state.length];
    if (group != null) {
      group.decide(state, now, request.operation().code(), quanta, next);
    } else {
      Engine.decide(compiled, state, now, request.operation().code(), quanta, request.count(),
          next);
    }
    return next;
  }

  /**
   * The grains a lease of {@code want} grains of {@code cost} is granted on {@code state} at
   * {@code now}: as many as every limit holds room for.
   */
  @Override
  public long granted(long[] state, long now, double cost, long want) {
    return Engine.lease(compiled, state, now, Engine.LEASE, cost, want, new long[state.length]);
  }

  /** The decision core builds from what the store saw: its clock and the state before. */
  @Override
  public Decision decision(long[] stateBefore, long now, Operation operation, double cost) {
    if (group != null) {
      return group.decide(stateBefore, now, operation.code(), group.quanta(cost),
          new long[stateBefore.length]);
    }
    return Engine.decide(compiled, stateBefore, now, operation.code(), cost,
        new long[stateBefore.length]);
  }

  /** Ticks until {@code state} holds nothing at {@code now}; 0 when the key is idle. */
  @Override
  public long idleAfter(long[] state, long now) {
    return Engine.idleAfter(compiled, state, now);
  }

  /**
   * A group's state: ticks until the key's part of it (the slots before the parent's) holds
   * nothing; 0 when idle.
   */
  @Override
  public long keyIdleAfter(long[] state, long now) {
    requireGroup();
    return group.keyIdleAfter(state, now);
  }

  /** A group's state: ticks until the parent's part of it holds nothing; 0 when idle. */
  @Override
  public long groupIdleAfter(long[] state, long now) {
    requireGroup();
    return group.parentIdleAfter(state, now);
  }

  private void requireGroup() {
    if (group == null) {
      throw new IllegalStateException("these limits are not a group's");
    }
  }

  GroupLimits group() {
    return group;
  }

  CompiledLimit[] compiled() {
    return compiled;
  }
}

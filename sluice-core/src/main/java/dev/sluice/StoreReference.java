package dev.sluice;

import dev.sluice.spi.StoreProtocol.Kind;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import java.util.List;
import java.util.Objects;

/**
 * Limits compiled for a store's clock, and the state transitions a store must reproduce bit for
 * bit: what {@link StoreRequest} a decision sends, and which state the store must keep after
 * applying it. For store implementers' tests; Sluice's own stores replay thousands of golden
 * vectors made from it. Using Sluice does not need it.
 *
 * <p>A store keeps {@link #next} when it differs from the state it read, deletes the key when
 * {@link #idleAfter} of that state is 0, and otherwise lets it expire after that many ticks.
 * Immutable and thread-safe.
 */
public final class StoreReference {
  private final CompiledLimit[] compiled;
  private final Kind[] kinds;
  private final long[] capacity;
  private final long[] window;
  private final long[] penalty;
  private final long[] scale;
  private final String layout;

  private StoreReference(List<Limit> limits, long ticksPerSecond) {
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
  public static StoreReference of(List<Limit> limits, long ticksPerSecond) {
    if (limits.isEmpty()) {
      throw new IllegalArgumentException("at least one limit is needed");
    }
    return new StoreReference(List.copyOf(limits), ticksPerSecond);
  }

  /** The request a decision of {@code operation} for {@code cost} sends to the store. */
  public StoreRequest request(Operation operation, double cost) {
    return request(operation, cost, 1);
  }

  /**
   * The request of {@code operation} for {@code cost}, with {@code count} grains of it for a
   * lease or a release.
   */
  public StoreRequest request(Operation operation, double cost, long count) {
    long[] quantum = new long[compiled.length];
    for (int i = 0; i < compiled.length; i++) {
      quantum[i] = compiled[i].quantum(cost);
    }
    return new StoreRequest(operation, kinds, capacity, window, penalty, quantum, scale, layout,
        count);
  }

  /** The limits' layout letters, e.g. "bs". */
  public String layout() {
    return layout;
  }

  /** The state of a key nobody has touched. */
  public long[] initialState() {
    return Engine.initialState(compiled);
  }

  /**
   * The state to keep after {@code operation} for {@code cost} at {@code now} (ticks) on
   * {@code state}.
   *
   * @throws UnsupportedOperationException for reserve on limits without a leak rate
   */
  public long[] next(long[] state, long now, Operation operation, double cost) {
    return next(state, now, operation, cost, 1);
  }

  /** As {@link #next(long[], long, Operation, double)}, for {@code count} grains. */
  public long[] next(long[] state, long now, Operation operation, double cost, long count) {
    long[] next = new long[state.length];
    Engine.decide(compiled, state, now, operation.code(), cost, count, next);
    return next;
  }

  /**
   * The state to keep after applying {@code request} on {@code state} at {@code now} (ticks):
   * what a store's atomic step computes. The request must have been made for these limits.
   *
   * @throws IllegalArgumentException if the request's layout is not these limits'
   */
  public long[] next(long[] state, long now, StoreRequest request) {
    if (!request.layout().equals(layout) || request.limits() != compiled.length) {
      throw new IllegalArgumentException("a request of layout '" + request.layout()
          + "' does not belong to limits of layout '" + layout + "'");
    }
    long[] quanta = new long[compiled.length];
    for (int i = 0; i < quanta.length; i++) {
      quanta[i] = request.quantum(i);
    }
    long[] next = new long[state.length];
    Engine.decide(compiled, state, now, request.operation().code(), quanta, request.count(), next);
    return next;
  }

  /**
   * The grains a lease of {@code want} grains of {@code cost} is granted on {@code state} at
   * {@code now}: as many as every limit holds room for.
   */
  public long granted(long[] state, long now, double cost, long want) {
    return Engine.lease(compiled, state, now, Engine.LEASE, cost, want, new long[state.length]);
  }

  /** The decision core builds from what the store saw: its clock and the state before. */
  public Decision decision(long[] stateBefore, long now, Operation operation, double cost) {
    return Engine.decide(compiled, stateBefore, now, operation.code(), cost,
        new long[stateBefore.length]);
  }

  /** Ticks until {@code state} holds nothing at {@code now}; 0 when the key is idle. */
  public long idleAfter(long[] state, long now) {
    return Engine.idleAfter(compiled, state, now);
  }

  CompiledLimit[] compiled() {
    return compiled;
  }
}

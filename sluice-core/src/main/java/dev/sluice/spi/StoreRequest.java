package dev.sluice.spi;

import dev.sluice.spi.StoreProtocol.Kind;
import dev.sluice.spi.StoreProtocol.Operation;

/**
 * One operation as a store must apply it: everything in integers (ticks of the store's clock,
 * steps of a bucket, micro-units of a window's count), so that a script or a statement computes
 * it exactly. {@link StoreProtocol} describes the state slots and the arguments.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public final class StoreRequest {
  /** "No time" in a state slot; the same as {@link StoreProtocol#NONE}. */
  public static final long NONE = StoreProtocol.NONE;

  private final Operation operation;
  private final Kind[] kinds;
  private final long[] capacity;
  private final long[] window;
  private final long[] penalty;
  private final long[] quantum;
  private final long[] scale;
  private final String layout;
  private final int stateLength;
  private final long count;
  private final long reserve;

  /**
   * A request on one key's limits, as core builds it (stores only read requests). The arrays
   * other than {@code quantum} are shared between requests and never changed.
   *
   * @param count the grains a lease asks for or a release gives back; 1 for other operations
   */
  public static StoreRequest of(Operation operation, Kind[] kinds, long[] capacity, long[] window,
      long[] penalty, long[] quantum, long[] scale, String layout, long count) {
    return new StoreRequest(operation, kinds, capacity, window, penalty, quantum, scale, layout,
        count, NOT_A_GROUP);
  }

  /**
   * A group's request ({@link #isGroup()}), as {@link #of} with the group's {@code reserve}: the
   * parent's steps that only assured traffic may fill (at least 0).
   */
  public static StoreRequest ofGroup(Operation operation, Kind[] kinds, long[] capacity,
      long[] window, long[] penalty, long[] quantum, long[] scale, String layout, long count,
      long reserve) {
    if (reserve < 0) {
      throw new IllegalArgumentException("a group's reserve must be at least 0 but was " + reserve);
    }
    return new StoreRequest(operation, kinds, capacity, window, penalty, quantum, scale, layout,
        count, reserve);
  }

  /** {@link #reserve} of a request that is not a group's. */
  private static final long NOT_A_GROUP = -1;

  private StoreRequest(Operation operation, Kind[] kinds, long[] capacity, long[] window,
      long[] penalty, long[] quantum, long[] scale, String layout, long count, long reserve) {
    this.count = count;
    this.reserve = reserve;
    this.operation = operation;
    this.kinds = kinds;
    this.capacity = capacity;
    this.window = window;
    this.penalty = penalty;
    this.quantum = quantum;
    this.scale = scale;
    this.layout = layout;
    int n = 0;
    for (int i = 0; i < kinds.length; i++) {
      n += kinds[i].slots(scale[i]);
    }
    this.stateLength = n;
  }

  /** The layout string of these limits, e.g. "bs": state stored under another is not reused. */
  public static String layout(Kind[] kinds, long[] scale) {
    StringBuilder b = new StringBuilder(kinds.length);
    for (int i = 0; i < kinds.length; i++) {
      b.append(kinds[i].letter(scale[i]));
    }
    return b.toString();
  }

  public Operation operation() {
    return operation;
  }

  /** Number of limits. */
  public int limits() {
    return kinds.length;
  }

  public Kind kind(int i) {
    return kinds[i];
  }

  /** Buckets: capacity in steps. Windows: the limit in micro-units. */
  public long capacity(int i) {
    return capacity[i];
  }

  /** Window length in ticks; 0 for buckets. */
  public long window(int i) {
    return window[i];
  }

  /** Buckets: penalty in steps. Windows: in ticks. 0 for none. */
  public long penalty(int i) {
    return penalty[i];
  }

  /** This operation's cost for limit i: bucket steps or window micro-units. */
  public long quantum(int i) {
    return quantum[i];
  }

  /** Steps per tick of limit i: 1 for windows and for buckets whose unit is whole ticks. */
  public long scale(int i) {
    return scale[i];
  }

  /** Slots limit i owns. */
  public int slots(int i) {
    return kinds[i].slots(scale[i]);
  }

  /** The limits' layout letters, e.g. "bs": state of another layout is not reused. */
  public String layout() {
    return layout;
  }

  /** Grains of the cost a lease asks for or a release gives back; 1 for other operations. */
  public long count() {
    return count;
  }

  /**
   * Whether this is a group's decision ({@code DecisionStore.applyGroup}): the limits are the
   * key's assured limit, its ceilings, and last the group's parent, whose state lives under the
   * group's own key. The state is the key's slots followed by the parent's.
   */
  public boolean isGroup() {
    return reserve != NOT_A_GROUP;
  }

  /**
   * A group's reserve: the parent's steps (of its capacity) that only assured traffic may fill;
   * -1 when this is not a group's request. Sent after the count.
   */
  public long reserve() {
    return reserve;
  }

  /** A group's request: the layout of the key's state (every letter but the parent's). */
  public String keyLayout() {
    return isGroup() ? layout.substring(0, layout.length() - 1) : layout;
  }

  /** A group's request: the layout of the parent's state (its one letter). */
  public String groupLayout() {
    return isGroup() ? layout.substring(layout.length() - 1) : "";
  }

  /** A group's request: slots of the key's state; the parent's follow. */
  public int keySlots() {
    return isGroup() ? stateLength - slots(kinds.length - 1) : stateLength;
  }

  /** Total slots of the state. */
  public int stateLength() {
    return stateLength;
  }

  /**
   * Limit i's argument at {@code offset}, one of the {@link StoreProtocol} {@code ARG_} offsets
   * ({@link StoreProtocol#ARGS_PER_LIMIT} of them, sent in that order).
   */
  public long argument(int i, int offset) {
    switch (offset) {
      case StoreProtocol.ARG_KIND:
        return kinds[i].code();
      case StoreProtocol.ARG_CAPACITY:
        return capacity[i];
      case StoreProtocol.ARG_WINDOW:
        return window[i];
      case StoreProtocol.ARG_PENALTY:
        return penalty[i];
      case StoreProtocol.ARG_QUANTUM:
        return quantum[i];
      case StoreProtocol.ARG_SCALE:
        return scale[i];
      default:
        throw new IllegalArgumentException("no argument at offset " + offset);
    }
  }

  /** The state of a key nobody has touched. */
  public long[] initialState() {
    long[] s = new long[stateLength];
    int o = 0;
    for (int i = 0; i < kinds.length; i++) {
      s[o] = NONE;
      if (kinds[i] != Kind.BUCKET) {
        s[o + slots(i) - 1] = NONE;
      }
      o += slots(i);
    }
    return s;
  }
}

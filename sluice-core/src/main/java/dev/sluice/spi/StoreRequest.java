package dev.sluice.spi;

/**
 * One operation as a store must apply it: everything in integers of the store's ticks (and, for
 * windows, micro-units of cost), so that a script or a statement can compute it exactly.
 *
 * <p>State layout: each limit owns {@link #slots(int)} consecutive longs. Bucket (kind 0):
 * {@code [E]}, the instant the bucket is empty. Fixed window (kind 1): {@code [start, count,
 * blockedUntil]}. Sliding window (kind 2): {@code [start, prev, curr, blockedUntil]}.
 * {@link #NONE} marks "no time" (a never-filled bucket, no window, no block).
 */
public final class StoreRequest {
  /** "No time" in a state slot. */
  public static final long NONE = Long.MIN_VALUE + 1;

  /** The operations. */
  public enum Operation { TRY_ACQUIRE, CHECK, FILL_UP, RESERVE }

  private final Operation operation;
  private final int[] kinds;
  private final long[] capacity;
  private final long[] window;
  private final long[] penalty;
  private final long[] quantum;
  private final String layout;

  /** Built by core; stores only read it. */
  public StoreRequest(Operation operation, int[] kinds, long[] capacity, long[] window,
      long[] penalty, long[] quantum) {
    this.operation = operation;
    this.kinds = kinds;
    this.capacity = capacity;
    this.window = window;
    this.penalty = penalty;
    this.quantum = quantum;
    StringBuilder b = new StringBuilder();
    for (int k : kinds) {
      b.append("bfs".charAt(k));
    }
    this.layout = b.toString();
  }

  public Operation operation() {
    return operation;
  }

  /** Number of limits. */
  public int limits() {
    return kinds.length;
  }

  /** 0 bucket (leaky, token, GCRA), 1 fixed window, 2 sliding window. */
  public int kind(int i) {
    return kinds[i];
  }

  /** Buckets: capacity as ticks of leak time. Windows: the limit in micro-units. */
  public long capacity(int i) {
    return capacity[i];
  }

  /** Window length in ticks; 0 for buckets. */
  public long window(int i) {
    return window[i];
  }

  /** Penalty in ticks; 0 for none. */
  public long penalty(int i) {
    return penalty[i];
  }

  /** This operation's cost for limit i: ticks of leak time (buckets) or micro-units (windows). */
  public long quantum(int i) {
    return quantum[i];
  }

  /** Slots limit i owns: 1, 3 or 4. */
  public int slots(int i) {
    return kinds[i] == 0 ? 1 : kinds[i] == 1 ? 3 : 4;
  }

  /** The kinds of the limits as letters, e.g. "bs": state of another layout is not reused. */
  public String layout() {
    return layout;
  }

  /** The state of a key nobody has touched. */
  public long[] initialState() {
    int n = 0;
    for (int i = 0; i < kinds.length; i++) {
      n += slots(i);
    }
    long[] s = new long[n];
    int o = 0;
    for (int i = 0; i < kinds.length; i++) {
      s[o] = NONE;
      if (kinds[i] != 0) {
        s[o + slots(i) - 1] = NONE;
      }
      o += slots(i);
    }
    return s;
  }
}

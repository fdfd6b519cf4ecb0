package dev.sluice.spi;

/**
 * What a store saw when it applied an operation: its clock reading, in its ticks, and the key's
 * state before the operation (the slots described by {@link StoreRequest}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public record Observation(long now, long[] stateBefore) {
  /** Stores that cannot hold {@link StoreRequest#NONE} send any value at or below this instead. */
  public static final long NONE_OR_BELOW = -(1L << 53);

  /** The state with store-side "none" markers mapped back to {@link StoreRequest#NONE}. */
  public long[] normalizedState() {
    long[] s = stateBefore.clone();
    for (int i = 0; i < s.length; i++) {
      if (s[i] <= NONE_OR_BELOW) {
        s[i] = StoreRequest.NONE;
      }
    }
    return s;
  }
}

package dev.sluice;

/**
 * The algorithms a {@link Limit} can use.
 *
 * <p>{@link #LEAKY_BUCKET}, {@link #TOKEN_BUCKET} and {@link #GCRA} are one mathematics under
 * three names (see {@code docs/semantics.md}): one implementation serves all three, and they
 * decide identically for equal capacity and rate.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#token-bucket-gcra-and-the-leaky-bucket-are-one-algorithm">docs/semantics.md, "Token bucket, GCRA and the leaky bucket are one algorithm"</a>.
 */
public enum Algorithm {
  /** Capacity and leak rate; the level rises by each cost and leaks continuously. */
  LEAKY_BUCKET("leaky-bucket", true),
  /** Capacity and refill rate; starts full, each cost takes tokens. Same decisions as the leaky bucket. */
  TOKEN_BUCKET("token-bucket", true),
  /** Rate and burst (the capacity), tracked as one theoretical arrival time. */
  GCRA("gcra", true),
  /** A count per window that starts with the first request and resets when the window ends. */
  FIXED_WINDOW("fixed-window", false),
  /** Counts in aligned windows; the previous window's count weighs in by the share still in view. */
  SLIDING_WINDOW("sliding-window", false);

  private final String id;
  private final boolean bucket;

  Algorithm(String id, boolean bucket) {
    this.id = id;
    this.bucket = bucket;
  }

  /** A short lower-case name, as used in configuration and on the command line. */
  public String id() {
    return id;
  }

  /** Whether this is one of the bucket family (a continuous level and a leak rate). */
  public boolean isBucket() {
    return bucket;
  }

  /** Returns the algorithm whose {@link #id()} is {@code id}. */
  public static Algorithm fromId(String id) {
    for (Algorithm a : values()) {
      if (a.id.equals(id)) {
        return a;
      }
    }
    throw new IllegalArgumentException(
        "unknown algorithm '" + id + "'; expected one of leaky-bucket, token-bucket, gcra,"
            + " fixed-window, sliding-window");
  }
}

package dev.sluice.spi;

/**
 * The one owner of the numbers core and a store's script agree on: operation codes, limit kinds
 * and their layout letters, the state slots of each kind, the arguments sent per limit, and the
 * "none" markers. {@code decide.lua} and the PostgreSQL function use these values; a test in each
 * store reads the script and fails if its constants differ from the ones here.
 *
 * <h2>State</h2>
 *
 * Each limit owns {@link Kind#slots(long)} consecutive longs:
 * <ul>
 *   <li>bucket (leaky, token, GCRA): {@code [E]}, or {@code [E, R]} when its scale is above 1.
 *       E is the instant (in ticks) the bucket is empty, rounded up to a tick; R is how many
 *       steps (1/scale of a tick) that rounding added. The backlog at {@code now} is
 *       {@code scale * (E - now) - R} steps while {@code E > now}, else 0.
 *   <li>fixed window: {@code [start, count, blockedUntil]}, the count in micro-units of cost.
 *   <li>sliding window: {@code [start, previous, current, blockedUntil]}.
 * </ul>
 * {@link #NONE} marks "no time" (a never-filled bucket, no window, no block); scripts computing
 * in doubles write {@link #SCRIPT_NONE} instead.
 *
 * <h2>Arguments</h2>
 *
 * Per limit, {@link #ARGS_PER_LIMIT} integers in the order of the {@code ARG_} offsets: kind
 * code, capacity (bucket: steps; window: micro-units), window (ticks; 0 for buckets), penalty
 * (bucket: steps; window: ticks; 0 for none), quantum (this operation's cost: bucket steps or
 * window micro-units), scale (steps per tick; 1 for windows). After the limits' arguments come
 * the {@code AFTER_LIMITS_} ones: the count of grains a lease asks for or a release gives back (1
 * for the others), and a group's reserve. Redis' ARGV starts with the {@code ARGV_} header.
 *
 * <p>{@code decide.lua} and the newest PostgreSQL functions name every one of these numbers
 * ({@code local ARG_KIND ...}, {@code c_arg_kind ...}); RedisProtocolTest and
 * PostgresProtocolTest compare each name with its value here.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 */
public final class StoreProtocol {
  private StoreProtocol() {}

  /** "No time" in a state slot. */
  public static final long NONE = Long.MIN_VALUE + 1;
  /** "No time" as a script computing in doubles writes it: -2^53; any value at or below means none. */
  public static final long SCRIPT_NONE = -(1L << 53);
  /** Scripts saturate sums of times at 2^53 - 1. */
  public static final long SCRIPT_MAX = (1L << 53) - 1;
  /**
   * The largest backlog, in steps, a bucket on a store computes with (2^52): capacity (at most
   * 2^51) plus penalty stays below it, so every sum a script forms is exact in doubles.
   */
  public static final long SCRIPT_BIG = 1L << 52;

  /** Slot offsets within a limit's state. */
  public static final int BUCKET_EMPTY_AT = 0;
  public static final int BUCKET_REMAINDER = 1;
  public static final int FIXED_START = 0;
  public static final int FIXED_COUNT = 1;
  public static final int FIXED_BLOCKED_UNTIL = 2;
  public static final int SLIDING_START = 0;
  public static final int SLIDING_PREVIOUS = 1;
  public static final int SLIDING_CURRENT = 2;
  public static final int SLIDING_BLOCKED_UNTIL = 3;

  /** Argument offsets within a limit's arguments. */
  public static final int ARG_KIND = 0;
  public static final int ARG_CAPACITY = 1;
  public static final int ARG_WINDOW = 2;
  public static final int ARG_PENALTY = 3;
  public static final int ARG_QUANTUM = 4;
  public static final int ARG_SCALE = 5;
  public static final int ARGS_PER_LIMIT = 6;

  /** Slots of each kind's state: a bucket of scale 1, of a larger scale, a fixed and a sliding window. */
  public static final int BUCKET_SLOTS = 1;
  public static final int SCALED_BUCKET_SLOTS = 2;
  public static final int FIXED_WINDOW_SLOTS = 3;
  public static final int SLIDING_WINDOW_SLOTS = 4;

  /**
   * After the limits' arguments, in Redis' ARGV and in PostgreSQL's {@code p_args} alike: the
   * count of grains a lease asks for or a release gives back (1 for other operations), then, for
   * a group's request only, the group's reserve.
   */
  public static final int AFTER_LIMITS_COUNT = 0;
  public static final int AFTER_LIMITS_RESERVE = 1;

  /**
   * Redis only: the header of the script's ARGV, before the limits' arguments (offsets from 0;
   * Lua's ARGV counts from 1): the operation code, the time in microseconds (-1: Redis
   * {@code TIME}), the layout, and the expiry padding in milliseconds (0 unless time is passed).
   */
  public static final int ARGV_OP = 0;
  public static final int ARGV_NOW = 1;
  public static final int ARGV_LAYOUT = 2;
  public static final int ARGV_EXPIRY_PADDING = 3;
  /** Redis only: arguments in ARGV's header; the first limit's arguments start here. */
  public static final int ARGV_HEADER = 4;

  /**
   * Permits (concurrency limits), Redis only: the offsets in {@code permits.lua}'s ARGV (from 0;
   * Lua's ARGV counts from 1): the {@link PermitOperation}'s code, the time in milliseconds (-1:
   * Redis {@code TIME}), the permit id, its weight, the ceiling (an acquire: the most weight in
   * flight after it), the lease in milliseconds, the expiry padding in milliseconds (0 unless
   * time is passed); then, in a group's calls only, the group's limit, its borrowing ceiling, the
   * key's assured share and the prefix of the key's members in the group's set. The permit
   * constants are apart from the rate protocol's: {@code decide.lua} does not name them.
   */
  public static final int PERMIT_ARGV_OP = 0;
  public static final int PERMIT_ARGV_NOW = 1;
  public static final int PERMIT_ARGV_ID = 2;
  public static final int PERMIT_ARGV_WEIGHT = 3;
  public static final int PERMIT_ARGV_CEILING = 4;
  public static final int PERMIT_ARGV_LEASE = 5;
  public static final int PERMIT_ARGV_EXPIRY_PADDING = 6;
  /** Arguments of a call outside a group. */
  public static final int PERMIT_ARGV_PLAIN = 7;
  public static final int PERMIT_ARGV_GROUP_LIMIT = 7;
  public static final int PERMIT_ARGV_GROUP_CEILING = 8;
  public static final int PERMIT_ARGV_ASSURED = 9;
  public static final int PERMIT_ARGV_MEMBERS = 10;
  /** Arguments of a group's call. */
  public static final int PERMIT_ARGV_GROUPED = 11;

  /**
   * The permit operations, with the codes {@code permits.lua} and the SQL permit functions
   * receive ({@code op_acquire} ... in SQL, {@code PERMIT_ACQUIRE} ... in Lua).
   */
  public enum PermitOperation {
    /** Takes a permit if its weight fits the ceiling; a resent acquire takes nothing twice. */
    ACQUIRE(0),
    /** Moves a held permit's lease end. */
    RENEW(1),
    /** Gives a held permit back. */
    RELEASE(2),
    /** Counts the weight in flight, changing nothing but expired permits. */
    COUNT(3),
    /** Gives back the permit of an acquire whose answer was lost, and bars the id for a lease. */
    CANCEL(4);

    private final int code;

    PermitOperation(int code) {
      this.code = code;
    }

    /** The code scripts and functions receive. */
    public int code() {
      return code;
    }
  }

  /** Layout letter of a bucket whose scale is above 1 (two slots). */
  public static final char SCALED_BUCKET_LETTER = 'r';

  /** The operations, with the codes scripts and statements receive. */
  public enum Operation {
    TRY_ACQUIRE(0), CHECK(1), FILL_UP(2), RESERVE(3),
    /** Takes up to {@code count} grains of the cost from every bucket at once (fleet leases). */
    LEASE(4),
    /** Gives {@code count} grains of the cost back to every bucket. */
    RELEASE(5);

    private final int code;

    Operation(int code) {
      this.code = code;
    }

    /** The code scripts receive. */
    public int code() {
      return code;
    }

    /** The operation of a code. */
    public static Operation of(int code) {
      for (Operation o : values()) {
        if (o.code == code) {
          return o;
        }
      }
      throw new IllegalArgumentException("no operation has code " + code);
    }
  }

  /** The limit kinds, with explicit codes and layout letters. */
  public enum Kind {
    BUCKET(0, 'b', BUCKET_SLOTS), FIXED_WINDOW(1, 'f', FIXED_WINDOW_SLOTS),
    SLIDING_WINDOW(2, 's', SLIDING_WINDOW_SLOTS);

    private final int code;
    private final char letter;
    private final int slots;

    Kind(int code, char letter, int slots) {
      this.code = code;
      this.letter = letter;
      this.slots = slots;
    }

    /** The code scripts receive. */
    public int code() {
      return code;
    }

    /** The layout letter of a limit of this kind and scale. */
    public char letter(long scale) {
      return this == BUCKET && scale != 1 ? SCALED_BUCKET_LETTER : letter;
    }

    /** Slots of a limit of this kind and scale. */
    public int slots(long scale) {
      return this == BUCKET && scale != 1 ? SCALED_BUCKET_SLOTS : slots;
    }

    /** The kind of a code. */
    public static Kind of(int code) {
      for (Kind k : values()) {
        if (k.code == code) {
          return k;
        }
      }
      throw new IllegalArgumentException("no limit kind has code " + code);
    }
  }
}

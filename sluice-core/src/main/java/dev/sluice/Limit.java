package dev.sluice;

import java.time.Duration;
import java.util.Objects;

/**
 * One limit on a key: an algorithm with its capacity and rate (or window), an optional penalty
 * and a name.
 *
 * <p>Immutable and thread-safe; the {@code with...} methods return new instances. Several limits
 * on one key (for example 10 per second and 1,000 per hour) are given to the builder together,
 * and a request is admitted only when all of them admit it.
 *
 * <p>Validation: capacities and limits must be positive and finite; window limits at most
 * {@value #MAX_WINDOW_LIMIT} (window counts are kept in micro-units, exact in 53 bits); windows
 * and penalties at least one microsecond. A violation is an {@link IllegalArgumentException}
 * whose message names the parameter and the value.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#one-number-per-bucket">docs/semantics.md, "One number per bucket"</a>.
 */
public final class Limit {
  /** The largest limit of a window algorithm: 2^53 micro-units. */
  public static final double MAX_WINDOW_LIMIT = 9_007_199_254d;

  private final Algorithm algorithm;
  private final double capacity;
  private final Rate rate;
  private final Duration window;
  private final Duration penalty;
  private final String name;

  private Limit(Algorithm algorithm, double capacity, Rate rate, Duration window,
      Duration penalty, String name) {
    this.algorithm = algorithm;
    this.capacity = capacity;
    this.rate = rate;
    this.window = window;
    this.penalty = penalty;
    this.name = name;
  }

  /**
   * A leaky bucket that holds at most {@code capacity} and leaks at {@code leakRate}. As a meter
   * ({@code tryAcquire}) it rejects what does not fit; as a queue ({@code reserve}) it delays
   * each admitted request so that the output runs at exactly the leak rate.
   */
  public static Limit leakyBucket(double capacity, Rate leakRate) {
    return bucket(Algorithm.LEAKY_BUCKET, "capacity", capacity, leakRate);
  }

  /** A token bucket of {@code capacity} tokens refilled at {@code refillRate}, starting full. */
  public static Limit tokenBucket(double capacity, Rate refillRate) {
    return bucket(Algorithm.TOKEN_BUCKET, "capacity", capacity, refillRate);
  }

  /**
   * GCRA with emission interval {@code 1/rate} and a delay tolerance of {@code burst} intervals:
   * {@code burst} requests may arrive back to back. (redis-cell and throttled call
   * {@code burst - 1} the "max burst".)
   */
  public static Limit gcra(Rate rate, double burst) {
    return bucket(Algorithm.GCRA, "burst", burst, rate);
  }

  /** At most {@code limit} per window; the window starts with the first request after a reset. */
  public static Limit fixedWindow(double limit, Duration window) {
    return windowed(Algorithm.FIXED_WINDOW, limit, window);
  }

  /**
   * The sliding-window counter: counts in windows aligned to multiples of {@code window}; the
   * previous window's count is weighted by the share of it still inside the sliding window.
   */
  public static Limit slidingWindow(double limit, Duration window) {
    return windowed(Algorithm.SLIDING_WINDOW, limit, window);
  }

  private static Limit bucket(Algorithm algorithm, String what, double capacity, Rate rate) {
    Checks.positiveFinite(what, capacity);
    Objects.requireNonNull(rate, "rate");
    return new Limit(algorithm, capacity, rate, null, Duration.ZERO, null);
  }

  private static Limit windowed(Algorithm algorithm, double limit, Duration window) {
    Checks.positiveFinite("limit", limit);
    if (limit > MAX_WINDOW_LIMIT) {
      throw new IllegalArgumentException(
          "limit of a window must be at most " + Checks.format(MAX_WINDOW_LIMIT) + " but was "
              + Checks.format(limit));
    }
    Checks.positive("window", window);
    if (window.compareTo(Duration.ofNanos(1000)) < 0) {
      throw new IllegalArgumentException("window must be at least 1µs but was " + window);
    }
    return new Limit(algorithm, limit, null, window, Duration.ZERO, null);
  }

  /**
   * Returns this limit with a penalty: once a request overflows it (a rejected
   * {@code tryAcquire} or {@code reserve}, or a {@code fillUp} that reaches capacity), the key
   * is rejected for {@code penalty}. A bucket is held full for the penalty and then leaks as
   * usual; a window rejects until the penalty ends. A cost that can never fit is not an overflow.
   */
  public Limit withPenalty(Duration penalty) {
    Checks.nonNegative("penalty", penalty);
    if (!penalty.isZero() && penalty.compareTo(Duration.ofNanos(1000)) < 0) {
      throw new IllegalArgumentException("penalty must be zero or at least 1µs but was " + penalty);
    }
    return new Limit(algorithm, capacity, rate, window, penalty, name);
  }

  /** Returns this limit with a name, used in decisions, headers and metrics. */
  public Limit named(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank");
    }
    return new Limit(algorithm, capacity, rate, window, penalty, name);
  }

  /** This bucket with its capacity and rate multiplied by {@code factor} (for a fleet's share). */
  Limit scaledBy(double factor) {
    if (rate == null) {
      throw new IllegalStateException(name() + " has no rate to share");
    }
    return new Limit(algorithm, capacity * factor, Rate.of(rate.amount() * factor, rate.period()),
        window, penalty, name);
  }

  public Algorithm algorithm() {
    return algorithm;
  }

  /** The capacity (buckets), burst (GCRA) or limit per window, in units of cost. */
  public double capacity() {
    return capacity;
  }

  /** The leak, refill or emission rate; null for window algorithms. */
  public Rate rate() {
    return rate;
  }

  /**
   * The window: for window algorithms as given; for buckets the time a full bucket takes to
   * empty ({@code capacity / rate}), which is what the RateLimit headers call the window.
   */
  public Duration window() {
    if (window != null) {
      return window;
    }
    double seconds = capacity / rate.perSecond();
    return seconds >= Ticks.MAX / 1e9
        ? Duration.ofNanos(Ticks.MAX)
        : Duration.ofNanos(Math.max(1, Math.round(seconds * 1e9)));
  }

  /** The penalty after an overflow; zero when none. */
  public Duration penalty() {
    return penalty;
  }

  /** The given name, or one made from the parameters such as {@code leaky-bucket(3 @ 1.5/1s)}. */
  public String name() {
    if (name != null) {
      return name;
    }
    String what = rate != null ? Checks.format(capacity) + " @ " + rate
        : Checks.format(capacity) + " / " + Ticks.formatDuration(window);
    return algorithm.id() + "(" + what + ")";
  }

  /**
   * Checks that a store whose clock ticks {@code ticksPerSecond} times a second (1,000,000,000
   * in memory; 1,000,000 for Redis and PostgreSQL) can hold this limit: the checks
   * {@code build()} makes, for tools that validate limits before building (a configuration file).
   *
   * @throws IllegalArgumentException naming the limit and what is out of range
   */
  public void checkRepresentable(long ticksPerSecond) {
    if (ticksPerSecond <= 0 || 1_000_000_000L % ticksPerSecond != 0) {
      throw new IllegalArgumentException("ticksPerSecond must divide 1e9 but was " + ticksPerSecond);
    }
    compile(ticksPerSecond);
  }

  /** Compiles this limit for a store whose clock ticks {@code ticksPerSecond} times a second. */
  CompiledLimit compile(long ticksPerSecond) {
    return new CompiledLimit(this, ticksPerSecond);
  }

  Duration windowOrNull() {
    return window;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Limit)) {
      return false;
    }
    Limit l = (Limit) o;
    return algorithm == l.algorithm && capacity == l.capacity && Objects.equals(rate, l.rate)
        && Objects.equals(window, l.window) && penalty.equals(l.penalty)
        && Objects.equals(name, l.name);
  }

  @Override
  public int hashCode() {
    return Objects.hash(algorithm, capacity, rate, window, penalty, name);
  }

  @Override
  public String toString() {
    return penalty.isZero() ? name() : name() + " penalty " + Ticks.formatDuration(penalty);
  }
}

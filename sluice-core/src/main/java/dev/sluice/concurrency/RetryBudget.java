package dev.sluice.concurrency;

import dev.sluice.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * A retry budget (as Finagle's and Envoy's): retries are allowed up to a share of the calls that
 * succeeded over a sliding window, plus a floor of retries per second, so that a struggling
 * backend is not met with a retry storm (every failed call tried again, its load multiplied just
 * when it can take least). Ask before each retry, record each success:
 *
 * <pre>{@code
 * RetryBudget budget = RetryBudget.builder().ratio(0.1).minPerSecond(10).build();
 * Response r = call();
 * while (retryable(r) && budget.tryRetry()) {   // false: the budget is spent, give up now
 *   r = call();
 * }
 * if (r.ok()) {
 *   budget.success();
 * }
 * }</pre>
 *
 * <p>Over the window, at most {@code ratio × successes + minPerSecond × window seconds} retries
 * are allowed: with a ratio of 0.1 a backend that serves 1,000 calls a second sees at most 100
 * retries a second on top, however many calls fail, and one that serves none sees at most the
 * floor. The window is split in 10 slots, so counts age out in tenths of it. A refused retry is
 * not counted as one. Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/grpc.md#retry-budgets">docs/grpc.md, "Retry budgets"</a>.
 */
public final class RetryBudget {
  private static final int SLOTS = 10;

  private final double ratio;
  private final double floor;
  /** Successes (first) and retries (second) over the window. */
  private final SlidingCounts counts;
  private long allowedTotal;
  private long refusedTotal;
  private long successTotal;

  private RetryBudget(Builder b) {
    this.ratio = b.ratio;
    this.floor = b.minPerSecond * b.window.toNanos() / 1e9;
    this.counts = new SlidingCounts(SLOTS, b.window.toNanos(), b.clock);
  }

  /** Settings: a ratio of 0.1, 10 retries a second at least, a window of 10 s, the system clock. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Whether a retry may be sent now: true counts it against the budget; false means give up
   * (the caller answers with the failure it has).
   */
  public synchronized boolean tryRetry() {
    long slot = counts.current();
    if (counts.second(slot) + 1 > ratio * counts.first(slot) + floor) {
      refusedTotal++;
      return false;
    }
    counts.addSecond(slot);
    allowedTotal++;
    return true;
  }

  /** A call (a first try or a retry) succeeded: it earns {@code ratio} of a retry. */
  public synchronized void success() {
    counts.addFirst(counts.current());
    successTotal++;
  }

  /** The retries the budget would allow now, without counting one. */
  public synchronized double available() {
    long slot = counts.current();
    return Math.max(0, ratio * counts.first(slot) + floor - counts.second(slot));
  }

  /** Retries allowed since the budget was built. */
  public synchronized long retriesAllowed() {
    return allowedTotal;
  }

  /** Retries refused since the budget was built. */
  public synchronized long retriesRefused() {
    return refusedTotal;
  }

  /** Successes recorded since the budget was built. */
  public synchronized long successes() {
    return successTotal;
  }

  @Override
  public synchronized String toString() {
    return "RetryBudget[ratio " + ratio + ", available " + available() + "]";
  }

  /** Settings of a {@link RetryBudget}; every setter names a bad value. */
  public static final class Builder {
    double ratio = 0.1;
    double minPerSecond = 10;
    Duration window = Duration.ofSeconds(10);
    Clock clock = Clock.system();

    Builder() {}

    /** Retries allowed per success over the window (default 0.1; 0 to 10). */
    public Builder ratio(double ratio) {
      if (!(ratio >= 0 && ratio <= 10)) {
        throw new IllegalArgumentException("ratio must be between 0 and 10 but was " + ratio);
      }
      this.ratio = ratio;
      return this;
    }

    /** Retries a second allowed whatever succeeds (default 10; 0 to 1,000,000). */
    public Builder minPerSecond(double retries) {
      if (!(retries >= 0 && retries <= 1_000_000)) {
        throw new IllegalArgumentException("minPerSecond must be between 0 and 1000000 but was "
            + retries);
      }
      this.minPerSecond = retries;
      return this;
    }

    /** The window the counts cover (default 10 s; 1 s to 1 hour). */
    public Builder window(Duration window) {
      Objects.requireNonNull(window, "window");
      if (window.compareTo(Duration.ofSeconds(1)) < 0
          || window.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("window must be between 1 s and 1 hour but was "
            + window);
      }
      this.window = window;
      return this;
    }

    /** The clock of the window (default the system's). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** The budget. */
    public RetryBudget build() {
      return new RetryBudget(this);
    }
  }
}

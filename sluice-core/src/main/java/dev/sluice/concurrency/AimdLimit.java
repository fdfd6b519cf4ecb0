package dev.sluice.concurrency;

import java.time.Duration;
import java.util.Objects;

/**
 * Additive increase, multiplicative decrease, decided once per window of samples (not per
 * sample, so that a burst of drops backs off once and a high rate does not race the limit to its
 * maximum): a window whose drop rate is above {@link Builder#dropThreshold} (a drop: a permit
 * ended {@link Outcome#DROPPED} or {@link Outcome#EXPIRED}, or slower than
 * {@link Builder#latencyThreshold}; not a drop that its wait explains,
 * {@link PermitEnd#droppedByItsWait}) multiplies the limit by {@link Builder#backoff}; a window
 * without, in which the limit was used (the most in flight reached {@code utilization} of it),
 * adds {@link Builder#increase}. An unused limit does not grow. Thread-safe.
 *
 * <pre>{@code
 * AdaptiveLimit aimd = AimdLimit.builder().initial(20).max(1000).backoff(0.9).build();
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#adaptive-limits-a-limit-that-follows-the-backend">docs/concurrency.md, "Adaptive limits: a limit that follows the backend"</a>.
 */
public final class AimdLimit implements AdaptiveLimit {
  private final int min;
  private final int max;
  private final double backoff;
  private final int increase;
  private final double dropThreshold;
  private final long latencyThresholdNanos;
  private final double utilization;
  private final SampleWindow window;
  private double estimate;
  private volatile int limit;

  private AimdLimit(Builder b) {
    this.min = b.min;
    this.max = b.max;
    this.backoff = b.backoff;
    this.increase = b.increase;
    this.dropThreshold = b.dropThreshold;
    this.latencyThresholdNanos = b.latencyThreshold == null ? Long.MAX_VALUE
        : b.latencyThreshold.toNanos();
    this.utilization = b.utilization;
    this.window = new SampleWindow(b.window.toNanos(), b.window.toNanos() * 10, b.windowSamples);
    this.estimate = Math.max(min, Math.min(max, b.initial));
    this.limit = (int) estimate;
  }

  /** Settings, with defaults that suit a backend of tens to hundreds of concurrent calls. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public int maxLimit() {
    return max;
  }

  @Override
  public int limit() {
    return limit;
  }

  @Override
  public synchronized void onEnd(PermitEnd end, long nowNanos) {
    if (end.outcome() == Outcome.IGNORED || end.heldThroughAPause()) {
      return;   // says nothing of the backend: a client error, or a pause of this process
    }
    // a drop that its wait in the queue explains is the queue's, not the backend's
    boolean dropped = (end.outcome() != Outcome.SUCCESS && !end.droppedByItsWait())
        || end.heldNanos() > latencyThresholdNanos;
    if (!window.add(end.heldNanos(), end.inFlight(), dropped, nowNanos)) {
      return;
    }
    if (window.dropRate() > dropThreshold) {
      estimate = estimate * backoff;
    } else if (window.maxInFlight >= utilization * estimate) {
      estimate = estimate + increase;
    }
    estimate = Math.max(min, Math.min(max, estimate));
    limit = (int) estimate;
    window.reset(nowNanos);
  }

  @Override
  public String toString() {
    return "AimdLimit[" + limit + " in " + min + ".." + max + "]";
  }

  /** Settings of an {@link AimdLimit}; every setter names a bad value. */
  public static final class Builder {
    int initial = 20;
    int min = 1;
    int max = 1000;
    double backoff = 0.9;
    int increase = 1;
    double dropThreshold = 0.01;
    Duration latencyThreshold;
    double utilization = 0.8;
    Duration window = Duration.ofMillis(100);
    int windowSamples = 20;

    Builder() {}

    /** The limit to start from (default 20). */
    public Builder initial(int permits) {
      this.initial = AdaptiveSettings.atLeastOne(permits, "initial");
      return this;
    }

    /** The floor (default 1). */
    public Builder min(int permits) {
      this.min = AdaptiveSettings.atLeastOne(permits, "min");
      return this;
    }

    /** The ceiling (default 1,000). */
    public Builder max(int permits) {
      this.max = AdaptiveSettings.atLeastOne(permits, "max");
      return this;
    }

    /** What a window with drops multiplies the limit by (default 0.9; above 0, below 1). */
    public Builder backoff(double ratio) {
      this.backoff = AdaptiveSettings.fraction(ratio, "backoff");
      return this;
    }

    /** What a window without drops, whose limit was used, adds (default 1). */
    public Builder increase(int permits) {
      this.increase = AdaptiveSettings.atLeastOne(permits, "increase");
      return this;
    }

    /** The drop rate a window may have without backing off (default 0.01; 0 to below 1). */
    public Builder dropThreshold(double rate) {
      this.dropThreshold = AdaptiveSettings.dropRate(rate);
      return this;
    }

    /** A permit held longer than this counts as a drop (default: none; only outcomes count). */
    public Builder latencyThreshold(Duration threshold) {
      this.latencyThreshold = AdaptiveSettings.positive(threshold, "latencyThreshold");
      return this;
    }

    /**
     * The shortest window and the fewest samples in one (default 100 ms and 20; a window also
     * closes after ten times its length with any sample).
     */
    public Builder window(Duration length, int samples) {
      this.window = AdaptiveSettings.positive(length, "window");
      this.windowSamples = AdaptiveSettings.atLeastOne(samples, "window samples");
      return this;
    }

    /**
     * The limit.
     *
     * @throws IllegalStateException if min is above max
     */
    public AimdLimit build() {
      AdaptiveSettings.checkRange(min, max);
      return new AimdLimit(this);
    }
  }

  /** Shared checks of the adaptive limits' settings. */
  static final class AdaptiveSettings {
    private AdaptiveSettings() {}

    static int atLeastOne(int n, String what) {
      if (n < 1) {
        throw new IllegalArgumentException(what + " must be at least 1 but was " + n);
      }
      return n;
    }

    static double fraction(double r, String what) {
      if (!(r > 0 && r < 1)) {
        throw new IllegalArgumentException(what + " must be above 0 and below 1 but was " + r);
      }
      return r;
    }

    static Duration positive(Duration d, String what) {
      Objects.requireNonNull(d, what);
      if (d.isZero() || d.isNegative() || d.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(what + " must be above 0 and at most 1 hour but was "
            + d);
      }
      return d;
    }

    static double dropRate(double rate) {
      if (!(rate >= 0 && rate < 1)) {
        throw new IllegalArgumentException("dropThreshold must be at least 0 and below 1 but was "
            + rate);
      }
      return rate;
    }

    static void checkRange(int min, int max) {
      if (min > max) {
        throw new IllegalStateException("min (" + min + ") must not be above max (" + max + ")");
      }
    }
  }
}

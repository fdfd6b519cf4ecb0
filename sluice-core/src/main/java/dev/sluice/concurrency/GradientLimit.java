package dev.sluice.concurrency;

import dev.sluice.concurrency.AimdLimit.AdaptiveSettings;
import java.time.Duration;

/**
 * A limit that follows the backend's latency against its latency with no queue (after Netflix's
 * gradient limits and Envoy's adaptive concurrency, with their known weak spots treated), decided
 * once per window of samples:
 *
 * <ul>
 *   <li>A window's latency is the <b>median</b> of its samples (of a uniform sample of 64 of
 *       them): a stall of the host (a GC pause, a starved CPU) adds its length to the few calls
 *       in flight through it, which move a mean and not a median.</li>
 *   <li>The <b>baseline</b> is the lowest window latency, forgotten slowly (it may rise by
 *       {@link Builder#drift} a window), so it follows a backend that got faster at once and
 *       one that got slower within a few seconds; and when the permits in flight fell, the
 *       latency did not follow them down, and the backend served fewer calls a second (a
 *       draining queue keeps it serving as many), the latency is the backend's own and not a
 *       queue's: the baseline moves up to it at once. No window pins the limit low to re-measure
 *       it (Envoy's minimum-RTT probe and its refusals).</li>
 *   <li>A permit held through a <b>pause of this process</b> ({@link PermitEnd#heldThroughAPause},
 *       from the clock's pause watch) teaches nothing: its latency, and the timeout the pause
 *       caused, are the host's.</li>
 *   <li>The <b>gradient</b> {@code tolerance × baseline / latency}, kept within 0.5 and 1,
 *       scales the limit down when a queue builds; headroom (a tenth of the limit, or its square
 *       root where that is more: a small backend needs a queue of a few calls to stay busy) is
 *       added only when the limit was used in the window (the most in flight reached 70% of it),
 *       so an idle backend does not let the limit grow without bound (Netflix's Gradient2's
 *       known weak spot).</li>
 *   <li>After a cut, the next cut waits for a window whose samples are mostly permits taken
 *       after it: the older ones measured the queue the cut is draining, and cutting on them
 *       again undershoots.</li>
 *   <li><b>Drops</b> count: a window whose drop rate (permits ended {@link Outcome#DROPPED} or
 *       {@link Outcome#EXPIRED}) is above {@link Builder#dropThreshold} multiplies the limit by
 *       {@link Builder#backoff} (Netflix's Gradient2 ignores them). A call that waited in the
 *       limiter's queue and was then held at least half the baseline, and that its caller reports
 *       {@link Outcome#DROPPED}, is late because of the wait, not of the backend: it counts as
 *       a latency sample (its time held is the backend's), so that waiting callers with short
 *       deadlines cannot drive the limit down (a lower limit, a longer wait, more late calls).
 *       A call that failed fast still counts as a drop, and so does every permit that expired;
 *       while a queue stands, the limit follows the backend's latency.</li>
 *   <li>Moves are smoothed ({@link Builder#smoothing}) and kept within {@code min} and
 *       {@code max}.</li>
 * </ul>
 *
 * <p>Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#adaptive-limits-a-limit-that-follows-the-backend">docs/concurrency.md, "Adaptive limits: a limit that follows the backend"</a>.
 */
public final class GradientLimit implements AdaptiveLimit {
  private final int min;
  private final int max;
  private final double tolerance;
  private final double smoothing;
  private final double backoff;
  private final double dropThreshold;
  private final double drift;
  private final double utilization;
  private final SampleWindow window;
  private double estimate;
  private double baseline = Double.NaN;
  /**
   * The window the latency is compared with when in flight falls: the last one in which in flight
   * rose, or the latency fell with it (NaN: none yet).
   */
  private double refRtt = Double.NaN;
  private double refInFlight = Double.NaN;
  private double refRate = Double.NaN;
  private double lastRtt = Double.NaN;
  private double lastInFlight = Double.NaN;
  private double lastRate = Double.NaN;
  private double lastGradient = Double.NaN;
  /** Until the first window with a queue or drops, a used limit grows by half a window. */
  private boolean slowStart = true;
  /** When the limit last came down (MIN_VALUE: never). */
  private long cutAt = Long.MIN_VALUE;
  /** Samples of this window whose permit was taken after the last cut. */
  private int fresh;
  private volatile int limit;
  /**
   * The share of the limit added as headroom when it was used (or its square root, where that is
   * more): it sets how far above the baseline latency settles under overload
   * ({@code tolerance / (1 - HEADROOM)}, 1.33 by default, for limits of 100 and more) and how fast
   * an unloaded limit grows (10% a window before smoothing).
   */
  private static final double HEADROOM = 0.1;

  private GradientLimit(Builder b) {
    this.min = b.min;
    this.max = b.max;
    this.tolerance = b.tolerance;
    this.smoothing = b.smoothing;
    this.backoff = b.backoff;
    this.dropThreshold = b.dropThreshold;
    this.drift = b.drift;
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

  /** The no-load latency the limit compares with, in nanoseconds (NaN before the first window). */
  public synchronized double baselineNanos() {
    return baseline;
  }

  /** As {@link #baselineNanos()}. */
  @Override
  public synchronized double noLoadLatencyNanos() {
    return baseline;
  }

  /**
   * {@code tolerance × baseline / latency} of the last window, within 0.5 and 1 (NaN before the
   * first window that computed one).
   */
  @Override
  public synchronized double gradient() {
    return lastGradient;
  }

  @Override
  public synchronized void onEnd(PermitEnd end, long nowNanos) {
    if (end.outcome() == Outcome.IGNORED || end.heldThroughAPause()) {
      return;   // says nothing of the backend: a client error, or a pause of this process
    }
    // a drop of a call that waited in the queue and that the backend then served at its pace
    // (not one that failed fast) is the queue's: a latency sample
    boolean queues = end.outcome() == Outcome.DROPPED && end.waitedNanos() > 0
        && end.heldNanos() >= baseline / 2;
    boolean dropped = end.outcome() != Outcome.SUCCESS && !queues;
    if (nowNanos - end.heldNanos() >= cutAt) {
      fresh++;
    }
    if (!window.add(end.heldNanos(), end.inFlight(), dropped, nowNanos)) {
      return;
    }
    // after a cut, the next one waits for a window of permits taken under the cut limit: the
    // older ones measured the queue the cut is draining (cutting on them undershoots)
    boolean seen = 2 * fresh >= window.samples;
    fresh = 0;
    double rtt = Math.max(1, window.medianRtt());
    double inFlight = window.meanInFlight();
    double rate = window.rate(nowNanos);
    if (Double.isNaN(baseline)) {
      baseline = rtt;
    } else {
      baseline = Math.min(rtt, baseline * (1 + drift));
      // fewer in flight, a latency that did not follow, and fewer calls served: the backend's
      // own speed, not a queue (a queue drains as in flight falls, and while it stands the
      // backend serves as many as before): a tenth fewer than the window before, or a fifth
      // fewer than when the latency last fell, a latency within 3% as high, and a rate that
      // fell by at least half as much as in flight
      if ((lastInFlight > 0 && inFlight <= 0.9 * lastInFlight && rtt >= 0.97 * lastRtt
          && rate <= (1 + inFlight / lastInFlight) / 2 * lastRate)
          || (refInFlight > 0 && inFlight <= 0.8 * refInFlight && rtt >= 0.97 * refRtt
          && rate <= (1 + inFlight / refInFlight) / 2 * refRate)) {
        baseline = Math.max(baseline, rtt / tolerance);
      }
    }
    double target;
    double before = estimate;
    boolean used = window.maxInFlight >= utilization * estimate;
    if (window.dropRate() > dropThreshold) {
      target = estimate * backoff;
      estimate = seen ? target : estimate;
      slowStart = false;
    } else if (slowStart && used && rtt <= tolerance * baseline) {
      estimate = estimate * 1.5;   // slow start: until the first sign of a queue
    } else {
      slowStart = false;
      double gradient = Math.max(0.5, Math.min(1.0, tolerance * baseline / rtt));
      lastGradient = gradient;
      // headroom only for a limit that was used: an idle backend does not raise it
      double headroom = used ? Math.max(Math.sqrt(estimate), HEADROOM * estimate) : 0;
      target = estimate * gradient + headroom;
      double next = (1 - smoothing) * estimate + smoothing * target;
      estimate = next < estimate && !seen ? estimate : next;
    }
    estimate = Math.max(min, Math.min(max, estimate));
    if (estimate < before) {
      cutAt = nowNanos;
    }
    limit = (int) estimate;
    lastRtt = rtt;
    lastInFlight = inFlight;
    lastRate = rate;
    if (Double.isNaN(refInFlight) || inFlight >= refInFlight || rtt < 0.97 * refRtt
        || inFlight <= 0.8 * refInFlight) {
      refRtt = rtt;
      refInFlight = inFlight;
      refRate = rate;
    }
    window.reset(nowNanos);
  }

  @Override
  public synchronized String toString() {
    return "GradientLimit[" + limit + " in " + min + ".." + max + ", baseline "
        + Math.round(baseline / 1e3) / 1e3 + " ms]";
  }

  /** Settings of a {@link GradientLimit}; every setter names a bad value. */
  public static final class Builder {
    int initial = 20;
    int min = 1;
    int max = 1000;
    double tolerance = 1.2;
    double smoothing = 0.3;
    double backoff = 0.9;
    double dropThreshold = 0.01;
    double drift = 0.0001;
    double utilization = 0.7;
    Duration window = Duration.ofMillis(100);
    int windowSamples = 100;

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

    /**
     * How much slower than the baseline a window may be before the limit comes down (default
     * 1.2: 20%; 1 to 10).
     */
    public Builder tolerance(double ratio) {
      if (!(ratio >= 1 && ratio <= 10)) {
        throw new IllegalArgumentException("tolerance must be between 1 and 10 but was " + ratio);
      }
      this.tolerance = ratio;
      return this;
    }

    /** The share of each window's target the limit moves by (default 0.3; above 0, at most 1). */
    public Builder smoothing(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("smoothing must be above 0 and at most 1 but was "
            + share);
      }
      this.smoothing = share;
      return this;
    }

    /** What a window with drops multiplies the limit by (default 0.9; above 0, below 1). */
    public Builder backoff(double ratio) {
      this.backoff = AdaptiveSettings.fraction(ratio, "backoff");
      return this;
    }

    /** The drop rate a window may have without backing off (default 0.01; 0 to below 1). */
    public Builder dropThreshold(double rate) {
      this.dropThreshold = AdaptiveSettings.dropRate(rate);
      return this;
    }

    /** How much the baseline may rise a window when latency stays above it (default 0.0001). */
    public Builder drift(double share) {
      this.drift = AdaptiveSettings.fraction(share, "drift");
      return this;
    }

    /**
     * The shortest window and the fewest samples in one (default 100 ms and 100; a window also
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
    public GradientLimit build() {
      AdaptiveSettings.checkRange(min, max);
      return new GradientLimit(this);
    }
  }
}

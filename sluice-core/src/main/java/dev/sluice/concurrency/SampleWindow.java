package dev.sluice.concurrency;

/**
 * The samples of one window of an adaptive limit: how many, their latencies, their drops, how
 * many were in flight. A window closes once it is at least {@code minNanos} long and holds at
 * least {@code minSamples} samples, or once it is {@code maxNanos} long with at least one: few
 * samples at low rates, a stable mean at high ones. Not thread-safe: its limit guards it.
 */
final class SampleWindow {
  private final long minNanos;
  private final long maxNanos;
  private final int minSamples;
  private long start = Long.MIN_VALUE;
  int samples;
  int drops;
  double rttSum;
  long inFlightSum;
  int maxInFlight;

  SampleWindow(long minNanos, long maxNanos, int minSamples) {
    this.minNanos = minNanos;
    this.maxNanos = maxNanos;
    this.minSamples = minSamples;
  }

  /** Adds a sample; true when the window is complete (then read it and {@link #reset}). */
  boolean add(long rttNanos, int inFlight, boolean dropped, long nowNanos) {
    if (start == Long.MIN_VALUE) {
      start = nowNanos;
    }
    samples++;
    rttSum += rttNanos;
    inFlightSum += inFlight;
    maxInFlight = Math.max(maxInFlight, inFlight);
    if (dropped) {
      drops++;
    }
    long length = nowNanos - start;
    return (length >= minNanos && samples >= minSamples) || length >= maxNanos;
  }

  double meanRtt() {
    return rttSum / samples;
  }

  double meanInFlight() {
    return (double) inFlightSum / samples;
  }

  double dropRate() {
    return (double) drops / samples;
  }

  void reset(long nowNanos) {
    start = nowNanos;
    samples = 0;
    drops = 0;
    rttSum = 0;
    inFlightSum = 0;
    maxInFlight = 0;
  }
}

package dev.sluice.concurrency;

import java.util.Arrays;

/**
 * The samples of one window of an adaptive limit: how many, their latencies, their drops, how
 * many were in flight. A window closes once it is at least {@code minNanos} long and holds at
 * least {@code minSamples} samples, or once it is {@code maxNanos} long with at least one: few
 * samples at low rates, a stable mean at high ones. Not thread-safe: its limit guards it.
 *
 * <p>Besides the mean, it keeps a uniform sample of at most {@value #KEPT} latencies (reservoir
 * sampling, seeded: the same samples give the same window) for the median, which a stall of the
 * host does not move: a pause adds its length to the few calls in flight, not to the rest.
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
  /** How many latencies the reservoir keeps for the median. */
  static final int KEPT = 64;
  private final double[] kept = new double[KEPT];
  private final double[] sorted = new double[KEPT];
  private long random = 0x9E3779B97F4A7C15L;

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
    if (samples < KEPT) {
      kept[samples] = rttNanos;
    } else {
      int j = next(samples + 1);
      if (j < KEPT) {
        kept[j] = rttNanos;
      }
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

  /** The median latency of the window's kept samples (its mean while it has none). */
  double medianRtt() {
    int n = Math.min(samples, KEPT);
    if (n == 0) {
      return meanRtt();
    }
    System.arraycopy(kept, 0, sorted, 0, n);
    Arrays.sort(sorted, 0, n);
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /** A number in [0, bound) from a xorshift generator. */
  private int next(int bound) {
    random ^= random << 13;
    random ^= random >>> 7;
    random ^= random << 17;
    return (int) Math.floorMod(random, (long) bound);
  }

  /** Samples a second from the window's start to {@code nowNanos}. */
  double rate(long nowNanos) {
    return samples * 1e9 / Math.max(1, nowNanos - start);
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

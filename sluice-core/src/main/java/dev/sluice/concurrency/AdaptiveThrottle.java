package dev.sluice.concurrency;

import dev.sluice.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * Client-side adaptive throttling for outbound calls (Google SRE book, "Handling Overload"): a
 * client whose backend refuses most calls stops sending most of them, refusing them locally
 * instead of adding load. Over a sliding window it counts the calls it was asked to make
 * ({@code requests}, local refusals included) and the ones the backend accepted
 * ({@code accepts}), and refuses a new call locally with probability
 * {@code max(0, (requests - K × accepts) / (requests + 1))}.
 *
 * <pre>{@code
 * AdaptiveThrottle throttle = AdaptiveThrottle.builder().k(2).window(Duration.ofMinutes(2)).build();
 * if (!throttle.tryRequest()) {
 *   return fallback();                 // refused here: the backend never sees it
 * }
 * Response r = call();
 * if (r.status() != 429 && r.status() != 503) {
 *   throttle.accepted();               // the backend took it
 * }
 * }</pre>
 *
 * <p>With K = 2 a client sends up to twice what its backend accepts: a healthy backend (every
 * call accepted) sees no local refusal at all, and a backend that accepts a tenth of the calls is
 * sent about a fifth of them. A lower K throttles harder and reacts sooner; a higher one wastes
 * more of the backend's effort on calls it refuses. The window is split in 20 slots, so counts
 * age out in twentieths of it. Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#adaptive-limits-a-limit-that-follows-the-backend">docs/concurrency.md, "Adaptive limits: a limit that follows the backend"</a>.
 */
public final class AdaptiveThrottle {
  private static final int SLOTS = 20;

  private final double k;
  private final DoubleSupplier random;
  /** Requests (first) and accepts (second) over the window. */
  private final SlidingCounts counts;

  private AdaptiveThrottle(Builder b) {
    this.k = b.k;
    this.random = b.random;
    this.counts = new SlidingCounts(SLOTS, b.window.toNanos(), b.clock);
  }

  /** Settings: K 2, a window of 2 minutes, the system clock. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Whether to send a call now: false refuses it locally (it still counts as a request). Call
   * {@link #accepted()} when the backend accepts one that was sent.
   */
  public boolean tryRequest() {
    double p;
    synchronized (this) {
      long slot = counts.current();
      p = probability(counts.first(slot), counts.second(slot));
      counts.addFirst(slot);
    }
    return p <= 0 || random.getAsDouble() >= p;
  }

  /** The backend accepted a call this client sent. */
  public synchronized void accepted() {
    counts.addSecond(counts.current());
  }

  /** The probability a call asked for now is refused locally. */
  public synchronized double rejectProbability() {
    long slot = counts.current();
    return probability(counts.first(slot), counts.second(slot));
  }

  private double probability(long requestCount, long acceptCount) {
    return Math.max(0, (requestCount - k * acceptCount) / (requestCount + 1));
  }

  @Override
  public synchronized String toString() {
    return "AdaptiveThrottle[K " + k + ", reject probability " + rejectProbability() + "]";
  }

  /** Settings of an {@link AdaptiveThrottle}; every setter names a bad value. */
  public static final class Builder {
    double k = 2;
    Duration window = Duration.ofMinutes(2);
    Clock clock = Clock.system();
    DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();

    Builder() {}

    /** The multiplier K: a client sends up to K times what its backend accepts (default 2). */
    public Builder k(double multiplier) {
      if (!(multiplier >= 1 && multiplier <= 100)) {
        throw new IllegalArgumentException("K must be between 1 and 100 but was " + multiplier);
      }
      this.k = multiplier;
      return this;
    }

    /** The window the counts cover (default 2 minutes; 1 s to 1 hour). */
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

    /** Uniform numbers in [0, 1) for the local refusals (default a thread-local random; tests). */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /** The throttle. */
    public AdaptiveThrottle build() {
      return new AdaptiveThrottle(this);
    }
  }
}

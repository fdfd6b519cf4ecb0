package dev.sluice.health;

import dev.sluice.Clock;
import dev.sluice.concurrency.Priority;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;

/**
 * Sheds work by the backend's health: a request within every limit is still refused, by priority,
 * when a resource runs out (the CPU, a pool, the heap). Each {@link HealthSignal} has a band: from
 * {@code start} its pressure rises from 0 to 1 at {@code full}. The shedder's pressure is its
 * worst signal's, and it refuses at random, more as the pressure rises: {@link
 * Priority#SHEDDABLE} work from pressure 0 (all of it at 0.5), {@link Priority#NORMAL} from 0.5
 * (all of it at 1), {@link Priority#CRITICAL} never unless {@link Builder#shedCritical} (then from
 * 1 on). A ramp, not a cliff: a backend a little past its threshold loses a little sheddable
 * work, not every request.
 *
 * <p><b>Hysteresis.</b> Once a signal reaches {@code start}, its pressure is counted from a lower
 * edge, {@code start} less a share of its band ({@link Builder#hysteresis}, 5% by default), and
 * it sheds until it falls below that edge: a signal hovering at its threshold does not flip the
 * shedder on and off. The price is a small step where it starts: with the default, a pressure of
 * 0.05 (a tenth of the sheddable work) at {@code start}.
 *
 * <p><b>The guard.</b> A host made busy by someone else (a neighbour on the machine, a batch job
 * in the container) raises the CPU while the backend still serves its own work well. With work
 * reported ({@link Verdict#end()} on each admitted call), the shedder refuses only while the
 * calls in flight exceed what the backend's best throughput and its best latency explain
 * (Little's law: the most calls completed in a second of the last ten times the lowest mean
 * latency of those seconds, plus one), as Sentinel's BBR-style system rule does. Until a second
 * of completions is known, and for a shedder whose calls are never ended, the guard lets the
 * signals decide ({@link Builder#guard}).
 *
 * <p><b>Sampling.</b> The signals are read at most once per {@link Builder#sampleEvery} (100 ms
 * by default), by whichever caller finds the reading stale; every other caller decides on the
 * last reading without reading a signal or taking a lock. A refusal names its signal, the value
 * read and the band ({@link Verdict#reason()}).
 *
 * <pre>{@code
 * HealthShedder shedder = HealthShedder.builder()
 *     .signal(Signals.containerCpu(), 0.80, 0.95)
 *     .signal(Signals.executor("workers", pool), 0.90, 1.0)
 *     .build();
 * HealthShedder.Verdict v = shedder.admit(Priority.SHEDDABLE);
 * if (!v.admitted()) {
 *   return tooBusy(v.reason());                    // 503, say, with v.reason() in the body
 * }
 * try {
 *   return handle(request);
 * } finally {
 *   v.end();                                       // what the guard learns from
 * }
 * }</pre>
 *
 * <p>Thread-safe; {@link #admit} allocates one small verdict.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/health.md#how-it-decides">docs/health.md, "How it decides"</a>.
 */
public final class HealthShedder {
  private static final int WINDOWS = 10;
  private static final long SECOND = 1_000_000_000L;

  private final Band[] bands;
  private final Clock clock;
  private final DoubleSupplier random;
  private final long sampleNanos;
  private final boolean guard;
  private final boolean shedCritical;
  /** The last reading; replaced whole by the caller that samples. */
  private volatile Reading reading;
  private volatile long nextSample;
  private final AtomicBoolean sampling = new AtomicBoolean();
  private final AtomicInteger inFlight = new AtomicInteger();
  /** Per second of the last ten (by second number mod 10): its number, completions, latency. */
  private final AtomicLong[] windowSecond = new AtomicLong[WINDOWS];
  private final AtomicLong[] windowCount = new AtomicLong[WINDOWS];
  private final AtomicLong[] windowNanos = new AtomicLong[WINDOWS];
  private final AtomicLong refused = new AtomicLong();
  /** Refusals by priority's ordinal. */
  private final AtomicLong[] refusedBy = {new AtomicLong(), new AtomicLong(), new AtomicLong()};

  private HealthShedder(Builder b) {
    this.bands = b.bands.toArray(new Band[0]);
    this.clock = b.clock;
    this.random = b.random;
    this.sampleNanos = b.sampleEvery.toNanos();
    this.guard = b.guard;
    this.shedCritical = b.shedCritical;
    for (int i = 0; i < WINDOWS; i++) {
      windowSecond[i] = new AtomicLong(Long.MIN_VALUE);
      windowCount[i] = new AtomicLong();
      windowNanos[i] = new AtomicLong();
    }
    this.nextSample = clock.nanoTime();
    this.reading = new Reading(0, null, Double.NaN, new double[bands.length], Integer.MAX_VALUE);
  }

  /** A builder of a shedder with no signal yet. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Whether work of {@code priority} may run now. An admitted verdict should be {@link
   * Verdict#end() ended} when its work is done (the guard learns from it); a refused one holds
   * nothing.
   */
  public Verdict admit(Priority priority) {
    Objects.requireNonNull(priority, "priority");
    long now = clock.nanoTime();
    if (now - nextSample >= 0 && sampling.compareAndSet(false, true)) {
      try {
        reading = sample(now);
        nextSample = now + sampleNanos;
      } finally {
        sampling.set(false);
      }
    }
    Reading r = reading;
    double p = shedProbability(r.pressure, priority);
    if (p > 0 && (!guard || r.explained == Integer.MAX_VALUE || inFlight.get() > r.explained)
        && (p >= 1 || random.getAsDouble() < p)) {
      refused.incrementAndGet();
      refusedBy[priority.ordinal()].incrementAndGet();
      return new Verdict(this, false, priority, r, p, now);
    }
    inFlight.incrementAndGet();
    return new Verdict(this, true, priority, r, p, now);
  }

  /** The share of {@code priority}'s work refused at {@code pressure}. */
  double shedProbability(double pressure, Priority priority) {
    if (!(pressure > 0)) {
      return 0;
    }
    return switch (priority) {
      case SHEDDABLE -> Math.min(1, pressure * 2);
      case NORMAL -> Math.max(0, Math.min(1, pressure * 2 - 1));
      case CRITICAL -> shedCritical && pressure >= 1 ? 1 : 0;
    };
  }

  /** Reads every signal: the pressure, the worst signal, and what the guard allows. */
  private Reading sample(long now) {
    double worst = 0;
    Band worstBand = null;
    double worstValue = Double.NaN;
    double[] values = new double[bands.length];
    for (int i = 0; i < bands.length; i++) {
      Band b = bands[i];
      double v;
      try {
        v = b.signal.read();
      } catch (RuntimeException e) {
        v = Double.NaN;
      }
      values[i] = v;
      double p = b.pressure(v);
      if (p > worst) {
        worst = p;
        worstBand = b;
        worstValue = v;
      }
    }
    return new Reading(worst, worstBand, worstValue, values, explained(now));
  }

  /** The calls in flight the best second of the last ten explains, plus one; MAX_VALUE if none. */
  private int explained(long now) {
    long second = Math.floorDiv(now, SECOND);
    long best = 0;
    double lowestMean = Double.POSITIVE_INFINITY;
    for (int i = 0; i < WINDOWS; i++) {
      long s = windowSecond[i].get();
      long count = windowCount[i].get();
      if (s >= second - WINDOWS && s < second && count > 0) {   // whole seconds only
        best = Math.max(best, count);
        lowestMean = Math.min(lowestMean, (double) windowNanos[i].get() / count);
      }
    }
    if (best == 0) {
      return Integer.MAX_VALUE;
    }
    return (int) Math.min(Integer.MAX_VALUE - 1L, (long) Math.ceil(best * lowestMean / SECOND)) + 1;
  }

  /** An admitted call ended after {@code nanos}. */
  private void ended(long end, long nanos) {
    inFlight.decrementAndGet();
    long second = Math.floorDiv(end, SECOND);
    int i = (int) Math.floorMod(second, (long) WINDOWS);
    long was = windowSecond[i].get();
    if (was != second && windowSecond[i].compareAndSet(was, second)) {
      windowCount[i].set(0);
      windowNanos[i].set(0);
    }
    windowCount[i].incrementAndGet();
    windowNanos[i].addAndGet(Math.max(0, nanos));
  }

  /** Calls admitted and not yet ended. */
  public int inFlight() {
    return inFlight.get();
  }

  /** Calls refused since start. */
  public long refused() {
    return refused.get();
  }

  /** Calls of {@code priority} refused since start. */
  public long refused(Priority priority) {
    return refusedBy[priority.ordinal()].get();
  }

  /** The pressure of the last reading, 0 (healthy) to 1 (every band full). */
  public double pressure() {
    return reading.pressure;
  }

  /** Each signal's last value, in the order they were added ({@code NaN}: not read, or unknown). */
  public List<SignalValue> signals() {
    Reading r = reading;
    List<SignalValue> out = new ArrayList<>(bands.length);
    for (int i = 0; i < bands.length; i++) {
      Band b = bands[i];
      out.add(new SignalValue(b.signal.name(), r.values[i], b.start, b.full, b.active));
    }
    return List.copyOf(out);
  }

  /**
   * A signal's last value and its band.
   *
   * @param name the signal's name
   * @param value its last value ({@code NaN}: not read, or unknown)
   * @param start where its pressure starts
   * @param full where its pressure is 1
   * @param shedding whether it is past {@code start} (its hysteresis counted)
   */
  public record SignalValue(String name, double value, double start, double full,
      boolean shedding) {}

  @Override
  public String toString() {
    return "HealthShedder" + signals();
  }

  /** What {@link #admit} answered. */
  public static final class Verdict {
    private final HealthShedder shedder;
    private final boolean admitted;
    private final Priority priority;
    private final Reading reading;
    private final double probability;
    private final long start;
    private final AtomicBoolean ended = new AtomicBoolean();

    Verdict(HealthShedder shedder, boolean admitted, Priority priority, Reading reading,
        double probability, long start) {
      this.shedder = shedder;
      this.admitted = admitted;
      this.priority = priority;
      this.reading = reading;
      this.probability = probability;
      this.start = start;
    }

    /** Whether the work may run. */
    public boolean admitted() {
      return admitted;
    }

    /** The priority asked for. */
    public Priority priority() {
      return priority;
    }

    /** The worst signal's name at the decision, or null when every signal was healthy. */
    public String signal() {
      return reading.band == null ? null : reading.band.signal.name();
    }

    /** The worst signal's value at the decision ({@code NaN} when every signal was healthy). */
    public double value() {
      return reading.value;
    }

    /** The pressure at the decision, 0 to 1. */
    public double pressure() {
      return reading.pressure;
    }

    /** The share of this priority's work refused at that pressure, 0 to 1. */
    public double shedProbability() {
      return probability;
    }

    /**
     * Why: for a refusal, e.g. {@code "shed: container.cpu at 0.97 (sheds SHEDDABLE from 0.80,
     * all at 0.95)"}; for an admission, {@code "admitted"}.
     */
    public String reason() {
      if (admitted) {
        return "admitted";
      }
      Band b = reading.band;
      return String.format(Locale.ROOT, "shed: %s at %.2f (sheds %s from %.2f, all"
          + " but critical at %.2f; pressure %.2f)", b.signal.name(), reading.value, priority,
          b.start, b.full, reading.pressure);
    }

    /**
     * The admitted work is done: the guard counts its latency. Once per verdict; a refused
     * verdict's end does nothing.
     */
    public void end() {
      if (admitted && ended.compareAndSet(false, true)) {
        long now = shedder.clock.nanoTime();
        shedder.ended(now, now - start);
      }
    }

    @Override
    public String toString() {
      return reason();
    }
  }

  /** One reading of every signal. */
  private record Reading(double pressure, Band band, double value, double[] values,
      int explained) {}

  /** A signal and its band; its hysteresis state is the sampling thread's. */
  private static final class Band {
    final HealthSignal signal;
    final double start;
    final double full;
    /** Where a signal past {@code start} stops shedding. */
    final double release;
    volatile boolean active;

    Band(HealthSignal signal, double start, double full, double hysteresis) {
      this.signal = signal;
      this.start = start;
      this.full = full;
      this.release = start - hysteresis * (full - start);
    }

    /** The pressure of {@code value}, 0 to 1; moves the hysteresis. */
    double pressure(double value) {
      if (Double.isNaN(value)) {
        active = false;
        return 0;
      }
      if (value >= start) {
        active = true;
      } else if (value < release) {
        active = false;
      }
      if (!active) {
        return 0;
      }
      if (value >= full) {
        return 1;
      }
      return Math.max(Double.MIN_VALUE, (value - release) / (full - release));
    }
  }

  /** Settings of a {@link HealthShedder}. */
  public static final class Builder {
    private final List<Band> bands = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    private double hysteresis = 0.05;
    private Duration sampleEvery = Duration.ofMillis(100);
    private Clock clock = Clock.system();
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private boolean guard = true;
    private boolean shedCritical;
    private final List<PendingBand> pending = new ArrayList<>();

    private Builder() {}

    /**
     * A signal and its band: shedding starts when it reaches {@code start} and is at its most at
     * {@code full} (above {@code start}). Names are unique within a shedder.
     *
     * @throws IllegalArgumentException naming the signal if the band is not {@code start < full},
     *     both finite, or the name is taken
     */
    public Builder signal(HealthSignal signal, double start, double full) {
      Objects.requireNonNull(signal, "signal");
      String name = Signals.checkName(signal.name());
      if (!Double.isFinite(start) || !Double.isFinite(full) || !(start < full)) {
        throw new IllegalArgumentException("signal " + name + " needs start < full, both finite,"
            + " but was start " + start + ", full " + full);
      }
      if (!names.add(name)) {
        throw new IllegalArgumentException("signal " + name + " is already in this shedder");
      }
      pending.add(new PendingBand(signal, start, full));
      return this;
    }

    /**
     * The share of a band (from 0 to below 1; default 0.05) a shedding signal falls below its
     * {@code start} before it stops; its pressure counts from there while it sheds.
     */
    public Builder hysteresis(double share) {
      if (!(share >= 0 && share < 1)) {
        throw new IllegalArgumentException("hysteresis must be from 0 to below 1 but was " + share);
      }
      this.hysteresis = share;
      return this;
    }

    /** How often the signals are read, at most (default 100 ms; 1 ms to 1 minute). */
    public Builder sampleEvery(Duration every) {
      Objects.requireNonNull(every, "every");
      if (every.toMillis() < 1 || every.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException("sampleEvery must be between 1 ms and 1 minute but was "
            + every);
      }
      this.sampleEvery = every;
      return this;
    }

    /**
     * Whether to shed only while the calls in flight exceed what the backend's best throughput
     * and latency explain (default true; see the class's description).
     */
    public Builder guard(boolean on) {
      this.guard = on;
      return this;
    }

    /** Whether critical work is shed too, at full pressure only (default false: never). */
    public Builder shedCritical(boolean on) {
      this.shedCritical = on;
      return this;
    }

    /** The clock (default the system's); tests pass a manual one. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Where the random draws come from, uniform in [0, 1) (default: the thread's own). */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /**
     * The shedder.
     *
     * @throws IllegalStateException if it has no signal
     */
    public HealthShedder build() {
      if (pending.isEmpty()) {
        throw new IllegalStateException("a HealthShedder needs at least one signal");
      }
      bands.clear();
      for (PendingBand p : pending) {
        bands.add(new Band(p.signal, p.start, p.full, hysteresis));
      }
      return new HealthShedder(this);
    }

    private record PendingBand(HealthSignal signal, double start, double full) {}
  }
}

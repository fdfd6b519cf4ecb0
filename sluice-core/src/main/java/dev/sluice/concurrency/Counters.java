package dev.sluice.concurrency;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/** The counts behind {@link ConcurrencyStats}, shared by the in-memory and the store limiter. */
final class Counters {
  private final LongAdder acquired = new LongAdder();
  private final LongAdder[] refused = adders(Refusal.values().length);
  private final LongAdder[] ended = adders(Outcome.values().length);
  private final LongAdder inFlight = new LongAdder();
  /**
   * The lane's handles (weight 1) apart: one count each way per permit, where the other paths
   * count the weight in flight too; the weight in flight of the lanes is what they acquired less
   * what ended.
   */
  private final LongAdder laneAcquired = new LongAdder();
  private final LongAdder[] laneEnded = adders(Outcome.values().length);
  final AtomicLong waiting = new AtomicLong();

  private static LongAdder[] adders(int n) {
    LongAdder[] a = new LongAdder[n];
    for (int i = 0; i < n; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** Counts an answer as the caller gets it; returns it. */
  Acquisition counted(Acquisition a) {
    if (a.isAcquired()) {
      acquired.increment();
    } else {
      refused[a.refusal().ordinal()].increment();
    }
    return a;
  }

  /** Counts the answer the future completes with; returns it. */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  CompletableFuture<Acquisition> counted(CompletableFuture<Acquisition> f) {
    f.whenComplete((a, failure) -> {
      if (a != null) {
        counted(a);
      }
    });
    return f;
  }

  /** Counts a handle permit acquired (nothing to return to count it from). */
  void acquired() {
    acquired.increment();
  }

  /** Counts a refusal of a handle permit. */
  void refused(Refusal why) {
    refused[why.ordinal()].increment();
  }

  /** A lane's handle was acquired (delivered: the lane's handles are never left undelivered). */
  void laneAcquired() {
    laneAcquired.increment();
  }

  /** A lane's handle ended with {@code outcome}. */
  void laneEnded(Outcome outcome) {
    laneEnded[outcome.ordinal()].increment();
  }

  /** A permit of {@code weight} was granted (delivered or not: an undelivered one ends too). */
  void granted(int weight) {
    inFlight.add(weight);
  }

  /** A permit of {@code weight} ended with {@code outcome}. */
  void ended(Outcome outcome, int weight) {
    ended[outcome.ordinal()].increment();
    inFlight.add(-weight);
  }

  /** A permit granted elsewhere (another instance) ended here with {@code outcome}. */
  void endedElsewhere(Outcome outcome) {
    ended[outcome.ordinal()].increment();
  }

  /** The listener, after counting the end. */
  Consumer<PermitEnd> counting(Consumer<PermitEnd> listener) {
    return end -> {
      ended(end.outcome(), end.weight());
      listener.accept(end);
    };
  }

  ConcurrencyStats stats(long keys, long storeErrors, long degraded, boolean circuitOpen) {
    long[] r = new long[refused.length];
    for (int i = 0; i < r.length; i++) {
      r[i] = refused[i].sum();
    }
    long[] e = new long[ended.length];
    long laneEnds = 0;
    for (int i = 0; i < e.length; i++) {
      long lane = laneEnded[i].sum();
      laneEnds += lane;
      e[i] = ended[i].sum() + lane;
    }
    long lanes = laneAcquired.sum();
    return new ConcurrencyStats(acquired.sum() + lanes, r, e, inFlight.sum() + lanes - laneEnds,
        waiting.get(), keys, storeErrors, degraded, circuitOpen);
  }
}

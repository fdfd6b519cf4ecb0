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
  private static final int PRIORITIES = Priority.values().length;
  /** Waiting now, by priority. */
  final AtomicLong[] waitingAt = new AtomicLong[PRIORITIES];
  /** Waiters given a permit, by priority. */
  private final LongAdder[] dispatched = adders(PRIORITIES);
  /** Acquisitions refused, by priority. */
  private final LongAdder[] refusedAt = adders(PRIORITIES);
  /** Under fair queuing, the flows active within its memory, by priority; null without. */
  private final FlowCount[] flows = new FlowCount[PRIORITIES];

  Counters() {
    for (int i = 0; i < PRIORITIES; i++) {
      waitingAt[i] = new AtomicLong();
    }
  }

  /**
   * A count of flows that decays by e every memory: each request adds its weight over its flow's
   * demand, so a flow that asked n counts about once, and the sum is the flows active within the
   * memory (summed over keys).
   */
  private static final class FlowCount {
    private final double memoryNanos;
    private double sum;
    private long at;

    FlowCount(long memoryNanos, long now) {
      this.memoryNanos = memoryNanos;
      this.at = now;
    }

    synchronized void add(double x, long now) {
      decayTo(now);
      sum += x;
    }

    synchronized double value(long now) {
      decayTo(now);
      return sum;
    }

    private void decayTo(long now) {
      if (now - at > 0) {
        sum *= Math.exp(-(now - at) / memoryNanos);
        at = now;
      }
    }
  }

  private static LongAdder[] adders(int n) {
    LongAdder[] a = new LongAdder[n];
    for (int i = 0; i < n; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** Counts an answer of {@code priority} as the caller gets it; returns it. */
  Acquisition counted(Acquisition a, Priority priority) {
    if (a.isAcquired()) {
      acquired.increment();
    } else {
      refused[a.refusal().ordinal()].increment();
      refusedAt[priority.ordinal()].increment();
    }
    return a;
  }

  /** Counts the answer of {@code priority} the future completes with; returns it. */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  CompletableFuture<Acquisition> counted(CompletableFuture<Acquisition> f, Priority priority) {
    f.whenComplete((a, failure) -> {
      if (a != null) {
        counted(a, priority);
      }
    });
    return f;
  }

  /** A waiter of priority {@code p} was given a permit. */
  void dispatched(int p) {
    dispatched[p].increment();
  }

  /** Under fair queuing: {@code x} more flows of priority {@code p} (see {@link FlowCount}). */
  void flows(int p, double x, long memoryNanos, long now) {
    FlowCount f = flows[p];
    if (f == null) {
      synchronized (flows) {
        f = flows[p];
        if (f == null) {
          f = new FlowCount(memoryNanos, now);
          flows[p] = f;
        }
      }
    }
    f.add(x, now);
  }

  /** Counts a handle permit acquired (nothing to return to count it from). */
  void acquired() {
    acquired.increment();
  }

  /** Counts a refusal of a handle permit (a handle is of priority NORMAL). */
  void refused(Refusal why) {
    refused[why.ordinal()].increment();
    refusedAt[Priority.NORMAL.ordinal()].increment();
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

  ConcurrencyStats stats(long keys, long storeErrors, long degraded, boolean circuitOpen,
      long now) {
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
    long[] waitingNow = new long[PRIORITIES];
    long[] dispatchedSoFar = new long[PRIORITIES];
    long[] refusedSoFar = new long[PRIORITIES];
    double[] flowsNow = new double[PRIORITIES];
    for (int i = 0; i < PRIORITIES; i++) {
      waitingNow[i] = waitingAt[i].get();
      dispatchedSoFar[i] = dispatched[i].sum();
      refusedSoFar[i] = refusedAt[i].sum();
      FlowCount f = flows[i];
      flowsNow[i] = f == null ? 0 : f.value(now);
    }
    return new ConcurrencyStats(acquired.sum() + lanes, r, e, inFlight.sum() + lanes - laneEnds,
        waiting.get(), keys, storeErrors, degraded, circuitOpen,
        new ConcurrencyStats.Levels(waitingNow, dispatchedSoFar, refusedSoFar, flowsNow));
  }
}

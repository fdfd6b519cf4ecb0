package dev.sluice;

import dev.sluice.internal.Breakers;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/*
 * Combines a JVM's tryAcquire calls on one key into one store call (DecisionStore
 * combinesDecisions).
 *
 * At most one call per key is in flight from this limiter. The first caller of an idle key makes
 * its own call, alone (the uncontended path is the plain one). Callers that arrive while a call is
 * in flight, for the same cost, join the batch that forms behind it, and wait. When the call in
 * flight ends, the batch goes as one call: a lease of as many grains as it has callers (a
 * batch of one goes as a plain tryAcquire). The store takes as many grains as fit, at one reading
 * of its clock, which is exactly what the same tryAcquire calls one after the other at that
 * instant would have taken, and reports the state before; each caller's own state before is then
 * worked out here, in batch order, by the engine (split), so each caller decides from its own
 * observation as if it had called alone.
 *
 * That equivalence holds for buckets without a penalty (a rejected tryAcquire that starts a
 * penalty writes; a lease never does): StoreRateLimiter combines only such limits.
 * CombinerEquivalenceTest checks it against the engine; the store conformance suite runs it on
 * PostgreSQL and MySQL.
 *
 * Bounds: one lane per key with a call in flight (removed when its last call ends), a batch of
 * at most MAX_BATCH callers (a caller that finds it full, or with another cost, calls alone).
 * A caller waits for the call in flight and its batch's call, each bounded by the store's own
 * timeout. A failed call fails every caller in its batch with one CombinedFailure, counted once
 * by whoever made the call.
 */
final class Combiner {
  static final int MAX_BATCH = 256;

  /** The store calls a combiner makes, and how a batch's observation is split. */
  interface Calls {
    /** The caller's own plain tryAcquire ({@code request}), on the calling thread. */
    Observation single(String key, StoreRequest request);

    /**
     * {@code count} tryAcquires of {@code cost} as one call (a lease of {@code count} grains;
     * {@code count} 1: a plain tryAcquire), without blocking the caller.
     */
    CompletableFuture<Observation> batch(String key, double cost, int count);

    /** Each caller's observation, in batch order, from the batch's. */
    Observation[] split(Observation seen, double cost, int count);

    /** A batch's call failed: counted once (the breaker, the error count). */
    void failed(String key, Throwable failure);
  }

  /** A batch's call failed; its cause has been counted once for the whole batch already. */
  static final class CombinedFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CombinedFailure(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }
  }

  private final Calls calls;
  private final ConcurrentHashMap<String, Lane> lanes = new ConcurrentHashMap<>();

  Combiner(Calls calls) {
    this.calls = calls;
  }

  /** A key with a call in flight, and the batch waiting behind it. */
  private static final class Lane {
    /** Guarded by this lane: the batch forming, or null. */
    private Batch forming;
    /** Guarded: the lane has left the map; nobody may join it. */
    private boolean closed;
  }

  private static final class Batch {
    final double cost;
    final List<CompletableFuture<Observation>> callers = new ArrayList<>();

    Batch(double cost) {
      this.cost = cost;
    }
  }

  /**
   * The caller's observation of a tryAcquire of {@code cost} on {@code key} (its store request
   * {@code request}), made alone or in a batch. Throws what the store threw (alone) or a
   * {@link CombinedFailure} (in a batch).
   */
  Observation apply(String key, double cost, StoreRequest request) {
    for (;;) {
      Lane mine = new Lane();
      Lane lane = lanes.putIfAbsent(key, mine);
      if (lane == null) {
        try {
          return calls.single(key, request);
        } finally {
          drain(key, mine);
        }
      }
      CompletableFuture<Observation> seat = join(lane, cost);
      if (seat == LEFT) {
        continue;   // the lane closed as we came: look again
      }
      if (seat == null) {
        return calls.single(key, request);   // the batch is full, or for another cost
      }
      try {
        return seat.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : e;
      }
    }
  }

  /**
   * {@link #apply} without blocking: the caller's call alone goes as an asynchronous one, and a
   * seat in a batch is answered when the batch's call ends.
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  CompletableFuture<Observation> applyAsync(String key, double cost) {
    for (;;) {
      Lane mine = new Lane();
      Lane lane = lanes.putIfAbsent(key, mine);
      if (lane == null) {
        CompletableFuture<Observation> call = send(key, cost, 1);
        call.whenComplete((seen, failure) -> drain(key, mine));
        return call;
      }
      CompletableFuture<Observation> seat = join(lane, cost);
      if (seat == LEFT) {
        continue;
      }
      return seat != null ? seat : send(key, cost, 1);
    }
  }

  /** The store's asynchronous call for {@code count} tryAcquires; a throw becomes a failure. */
  private CompletableFuture<Observation> send(String key, double cost, int count) {
    try {
      return calls.batch(key, cost, count);
    } catch (RuntimeException | Error e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Answers a seat in the lane's forming batch, null to call alone, LEFT if the lane closed. */
  private static CompletableFuture<Observation> join(Lane lane, double cost) {
    synchronized (lane) {
      if (lane.closed) {
        return LEFT;
      }
      Batch b = lane.forming;
      if (b == null) {
        b = new Batch(cost);
        lane.forming = b;
      } else if (b.cost != cost || b.callers.size() >= MAX_BATCH) {
        return null;
      }
      CompletableFuture<Observation> seat = new CompletableFuture<>();
      b.callers.add(seat);
      return seat;
    }
  }

  private static final CompletableFuture<Observation> LEFT = new CompletableFuture<>();

  /**
   * After a call on the lane's key ends: sends the batch formed behind it, and the next when
   * that one ends, until none has formed; then the lane leaves the map.
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void drain(String key, Lane lane) {
    for (;;) {
      Batch b;
      synchronized (lane) {
        b = lane.forming;
        lane.forming = null;
        if (b == null) {
          lane.closed = true;
          lanes.remove(key, lane);
          return;
        }
      }
      CompletableFuture<Observation> call = send(key, b.cost, b.callers.size());
      if (!call.isDone()) {
        Batch sent = b;
        call.whenComplete((seen, failure) -> {
          finish(key, sent, seen, failure);
          drain(key, lane);
        });
        return;
      }
      Observation seen = null;
      Throwable failure = null;
      try {
        seen = call.join();
      } catch (CompletionException e) {
        failure = Breakers.cause(e);
      } catch (RuntimeException e) {
        failure = e;
      }
      finish(key, b, seen, failure);
    }
  }

  /** Answers every caller of a batch whose call ended. */
  private void finish(String key, Batch b, Observation seen, Throwable failure) {
    Observation[] each = null;
    if (failure == null) {
      try {
        each = calls.split(seen, b.cost, b.callers.size());
      } catch (RuntimeException | Error e) {
        failure = e;
      }
    }
    if (failure != null) {
      Throwable cause = Breakers.cause(failure);
      try {
        calls.failed(key, cause);
      } finally {
        CombinedFailure f = new CombinedFailure(cause);
        for (CompletableFuture<Observation> c : b.callers) {
          c.completeExceptionally(f);
        }
      }
      return;
    }
    for (int i = 0; i < each.length; i++) {
      b.callers.get(i).complete(each[i]);
    }
  }

  /** Callers waiting in batches now (for tests). */
  int waiting() {
    int n = 0;
    for (Lane lane : lanes.values()) {
      synchronized (lane) {
        n += lane.forming == null ? 0 : lane.forming.callers.size();
      }
    }
    return n;
  }

  /** Keys with a call in flight now (for tests: 0 when nothing runs). */
  int lanes() {
    return lanes.size();
  }
}

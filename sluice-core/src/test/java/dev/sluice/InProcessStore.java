package dev.sluice;

import dev.sluice.spi.StoreReference;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A shared store in the test's JVM, for one set of limits: every call is one atomic step (a
 * monitor) on a clock in microseconds read from the test's clock, computed by StoreReference.
 * Asynchronous calls complete at once, or, while {@link #holdAsync} is set, when the test runs
 * them; {@link #down} makes every call fail as an unreachable store does.
 */
final class InProcessStore implements DecisionStore {
  private final StoreReference reference;
  private final Clock clock;
  private final Map<String, long[]> states = new HashMap<>();
  private final ArrayDeque<Runnable> held = new ArrayDeque<>();
  final AtomicInteger calls = new AtomicInteger();
  final AtomicInteger leaseCalls = new AtomicInteger();
  volatile boolean down;
  volatile boolean holdAsync;

  InProcessStore(List<Limit> limits, Clock clock) {
    this.reference = StoreReference.of(limits, 1_000_000);
    this.clock = clock;
  }

  /** A store for one group's decisions. */
  InProcessStore(Group group, Clock clock) {
    this.reference = StoreReference.ofGroup(group, 1_000_000);
    this.clock = clock;
  }

  @Override
  public boolean supportsGroups() {
    return true;
  }

  @Override
  public Observation applyGroup(String group, String key, StoreRequest request) {
    calls.incrementAndGet();
    if (down) {
      throw new StoreUnavailableException("the in-process store is down", null);
    }
    synchronized (this) {
      long now = Math.floorDiv(clock.nanoTime(), 1000);
      int k = request.keySlots();
      long[] before = request.initialState();
      long[] own = states.get("key:" + group + "\u0000" + key);
      long[] parent = states.get("group:" + group);
      if (own != null) {
        System.arraycopy(own, 0, before, 0, k);
      }
      if (parent != null) {
        System.arraycopy(parent, 0, before, k, parent.length);
      }
      long[] next = reference.next(before, now, request);
      states.put("key:" + group + "\u0000" + key, java.util.Arrays.copyOfRange(next, 0, k));
      states.put("group:" + group, java.util.Arrays.copyOfRange(next, k, next.length));
      return new Observation(now, before);
    }
  }

  @Override
  public synchronized void resetGroupMember(String group, String key) {
    states.remove("key:" + group + "\u0000" + key);
  }

  @Override
  public long ticksPerSecond() {
    return 1_000_000;
  }

  @Override
  public Observation apply(String key, StoreRequest request) {
    calls.incrementAndGet();
    if (request.operation() == Operation.LEASE || request.operation() == Operation.RELEASE) {
      leaseCalls.incrementAndGet();
    }
    if (down) {
      throw new StoreUnavailableException("the in-process store is down", null);
    }
    synchronized (this) {
      long now = Math.floorDiv(clock.nanoTime(), 1000);
      long[] before = states.getOrDefault(key, request.initialState());
      long[] next = reference.next(before, now, request);
      if (reference.idleAfter(next, now) == 0) {
        states.remove(key);
      } else {
        states.put(key, next);
      }
      return new Observation(now, before.clone());
    }
  }

  @Override
  public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
    if (!holdAsync) {
      return DecisionStore.super.applyAsync(key, request);
    }
    CompletableFuture<Observation> f = new CompletableFuture<>();
    synchronized (held) {
      held.add(() -> {
        try {
          f.complete(apply(key, request));
        } catch (RuntimeException e) {
          f.completeExceptionally(e);
        }
      });
    }
    return f;
  }

  /** The asynchronous calls held now. */
  int heldCount() {
    synchronized (held) {
      return held.size();
    }
  }

  /** Runs the asynchronous calls held so far; returns how many. */
  int runHeld() {
    int n = 0;
    for (;;) {
      Runnable r;
      synchronized (held) {
        r = held.poll();
      }
      if (r == null) {
        return n;
      }
      r.run();
      n++;
    }
  }

  /** The level of a key's bucket (the first limit) now, in units. */
  synchronized double level(String key) {
    long now = Math.floorDiv(clock.nanoTime(), 1000);
    long[] s = states.getOrDefault(key, reference.initialState());
    return reference.decision(s, now, Operation.CHECK, 1).level();
  }

  @Override
  public synchronized void reset(String key) {
    states.remove(key);
  }
}

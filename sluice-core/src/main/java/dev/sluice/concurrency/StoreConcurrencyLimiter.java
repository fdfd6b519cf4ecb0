package dev.sluice.concurrency;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import dev.sluice.StoreFailure;
import dev.sluice.internal.Breakers;
import dev.sluice.internal.CircuitBreaker;
import dev.sluice.internal.Saturating;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.StoreKeys;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/*
 * A concurrency limiter whose permits live in a PermitStore shared by a fleet.
 *
 * The count is the store's: every acquisition, renewal and release is one atomic call on the
 * store's clock, so the limit holds across every instance at every instant (the store never
 * admits past the ceiling it is sent). This JVM keeps only its waiters: one queue per priority
 * for each key that has any, bounded per key (maxWaiters) and in keys (maximumKeys). A key's
 * waiters are served by one "pump" at a time: it asks the store for the head waiter's permit,
 * asynchronously; granted, it moves to the next waiter at once; refused, it asks again when a
 * permit of the key is released in this JVM, or after the poll interval (a release elsewhere in
 * the fleet is seen within it). Store answers are handled on the common pool, never on the store
 * client's I/O thread, since a caller's callback may call the store again.
 *
 * Failures go through the breaker of the key's failure domain (Breakers, shared with the rate
 * limiters) and the failure policy: FAIL_CLOSED refuses (STORE_UNAVAILABLE), FAIL_OPEN grants a
 * permit that counts nowhere, FALLBACK_IN_MEMORY asks an in-memory limiter of the same settings.
 * An acquire that fails here (a timeout, a lost connection) may still have run on the store, or
 * may run there later (a paused server runs what waits in its socket when it resumes): its permit
 * would then be held by nobody until its lease ends. So every failed acquire is given back: the
 * store's cancel forgets the permit if held, and otherwise refuses the acquire should it come
 * later (PermitStore#cancel). The cancel is sent at once, on the store's connection right behind
 * the acquire, and again with backoff until the store answers or a lease has passed. A cancel
 * that the store answers also tells the breaker that the store is back, so grants resume as soon
 * as it answers, not a lease later.
 */
final class StoreConcurrencyLimiter implements ConcurrencyLimiter {

  private final PermitStore store;
  /** Makes each key's adaptive limit; null for fixed limits. */
  private final Supplier<AdaptiveLimit> adaptiveLimits;
  /** Each key's adaptive limit in this JVM, bounded by maximumKeys. */
  private final ConcurrentHashMap<String, AdaptiveLimit> adaptive = new ConcurrentHashMap<>();
  /** The keys' groups; null if none. */
  private final ConcurrencyGroup group;
  private final ConcurrencyLimiter.Builder settings;
  private final ToIntFunction<String> limitOfKey;
  private final long leaseNanos;
  private final long leaseMillis;
  private final long pollNanos;
  private final int maxWaiters;
  private final long maximumKeys;
  private final Clock clock;
  private final Scheduler scheduler;
  private final Consumer<PermitEnd> listener;
  private final Counters counters = new Counters();
  private final StoreFailure onFailure;
  private final Breakers breakers;
  /** The in-memory limiter of FALLBACK_IN_MEMORY; null otherwise. */
  private final ConcurrencyLimiter fallback;
  /** This limiter's part of every permit id it sends, so that ids never meet another's. */
  private final String instance;
  /** The key of the hash that makes the rest of each id unguessable (SipHash-2-4). */
  private final long idKey0;
  private final long idKey1;
  private final AtomicLong ids = new AtomicLong();
  private final ConcurrentHashMap<String, Waiters> waiting = new ConcurrentHashMap<>();
  private final AtomicLong waitingKeys = new AtomicLong();
  private final AtomicBoolean closed = new AtomicBoolean();
  /** Cancels of failed acquires not yet answered by the store (see giveBack). */
  private final AtomicLong pendingCancels = new AtomicLong();
  private final Permit.Owner shared = new Shared();
  private final Permit.Owner uncounted = new Uncounted();
  /**
   * Deadline-aware waits: each key's mean hold time (ns) of this JVM's permits that ended
   * SUCCESS or DROPPED; null when off. At most maximumKeys keys: a full map is cleared and
   * learned again (a key without an estimate waits as asked).
   */
  private final ConcurrentHashMap<String, HoldTime> holdTimes;

  StoreConcurrencyLimiter(ConcurrencyLimiter.Builder b) {
    this.store = b.group == null ? b.store : new GroupedPermits(b.store, b.group);
    this.group = b.group;
    this.adaptiveLimits = b.adaptive;
    this.settings = b;
    this.limitOfKey = b.limitOfKey();
    this.leaseNanos = b.lease.toNanos();
    this.leaseMillis = b.lease.toMillis();
    this.pollNanos = b.pollInterval.toNanos();
    this.maxWaiters = b.maxWaiters;
    this.maximumKeys = b.maximumKeys;
    this.clock = b.clock;
    this.scheduler = b.scheduler;
    this.listener = counters.counting(b.onPermitEnd);
    this.onFailure = b.onStoreFailure;
    this.breakers = new Breakers(b.breaker, b.clock);
    this.holdTimes = b.deadlineAware ? new ConcurrentHashMap<>() : null;
    this.fallback = b.onStoreFailure == StoreFailure.FALLBACK_IN_MEMORY
        ? new InMemoryConcurrencyLimiter(b) : null;
    SecureRandom random = new SecureRandom();
    this.instance = Long.toUnsignedString(random.nextLong(), 36);
    this.idKey0 = random.nextLong();
    this.idKey1 = random.nextLong();
  }

  // ------------------------------------------------------------------------------ acquiring

  @Override
  public Acquisition tryAcquire(String key, int weight, Priority priority) {
    return counters.counted(decide(key, weight, priority), priority);
  }

  private Acquisition decide(String key, int weight, Priority priority) {
    check(key, weight, priority);
    if (closed.get()) {
      return new Acquisition(null, Refusal.CLOSED, 0, 0, 0, 0);
    }
    int limit = currentLimit(key);
    Acquisition refused = refusedAtOnce(key, weight, priority, limit);
    if (refused != null) {
      return refused;
    }
    Waiters ws = waiting.get(key);
    if (ws != null) {
      synchronized (ws) {
        if (ws.atOrAbove(priority.ordinal())) {   // this JVM's waiters before it go first
          return new Acquisition(null, Refusal.FULL, limit, ws.lastInFlight, ws.queue.size(),
              0);
        }
      }
    }
    CircuitBreaker b = breaker(key);
    if (!b.allowsCall()) {
      return degraded(key, weight, priority, limit);
    }
    long id = ids.incrementAndGet();
    long start = clock.nanoTime();
    PermitReply reply;
    try {
      reply = store.acquire(key, storeId(id), weight, settings.ceiling(limit, priority),
          leaseMillis);
    } catch (RuntimeException e) {
      failed(b, e);
      giveBack(key, id, weight);
      return degraded(key, weight, priority, limit);
    }
    b.success();
    return answer(key, id, weight, priority, limit, reply, start, start,
        ws == null ? 0 : ws.queue.size());
  }

  /** Handle permits: the permit behind each handle (a store's permits are objects anyway). */
  private final ConcurrentHashMap<Long, Permit> handles = new ConcurrentHashMap<>();

  @Override
  public long tryAcquireHandle(String key) {
    Acquisition a = tryAcquire(key, 1, Priority.NORMAL);
    if (!a.isAcquired()) {
      return NO_PERMIT;
    }
    Permit p = a.permit();
    handles.put(p.id(), p);
    return p.id();
  }

  @Override
  public boolean release(String key, long handle, Outcome outcome) {
    InMemoryConcurrencyLimiter.checkRelease(outcome);
    Permit p = handles.get(handle);
    if (p == null || !p.key().equals(key) || !handles.remove(handle, p)) {
      return false;
    }
    return p.release(outcome);
  }

  /**
   * TOO_HEAVY or SHED when no wait could ever serve it (with an adaptive limit, not even at its
   * maximum); null otherwise.
   */
  private Acquisition refusedAtOnce(String key, int weight, Priority priority, int limit) {
    int most = limit;
    if (adaptiveLimits != null) {
      AdaptiveLimit a = adaptive.get(key);
      most = a == null ? Integer.MAX_VALUE : Math.max(1, a.maxLimit());
    }
    if (weight > most || (group != null
        && weight > Math.max(group.assuredOf(key), group.borrowCeiling()))) {
      return new Acquisition(null, Refusal.TOO_HEAVY, limit, 0, 0, 0);
    }
    if (weight > settings.ceiling(most, priority)) {
      return new Acquisition(null, Refusal.SHED, limit, 0, 0, 0);
    }
    return null;
  }

  /** The acquisition a store's reply to an acquire makes. */
  private Acquisition answer(String key, long id, int weight, Priority priority, int limit,
      PermitReply reply, long since, long now, int waiters) {
    if (reply.done()) {
      counters.granted(weight);
      Permit p = new Permit(shared, key, id, weight, now,
          Saturating.add(now, leaseNanos), reply.inFlight());
      return new Acquisition(p, null, limit, reply.inFlight(), waiters, now - since, false,
          group != null && reply.inFlight() > group.assuredOf(key));
    }
    // over the priority's share but within the limit: shed; otherwise (the group's too) full
    int n = reply.inFlight() + weight;
    boolean shed = n <= limit && n > settings.ceiling(limit, priority);
    return new Acquisition(null, shed ? Refusal.SHED : Refusal.FULL, limit, reply.inFlight(),
        waiters, now - since);
  }

  @Override
  public Acquisition acquire(String key, int weight, Priority priority, Duration timeout) {
    return InMemoryConcurrencyLimiter.waitFor(acquireAsync(key, null, weight, priority, timeout));
  }

  @Override
  public Acquisition acquire(String key, String flow, int weight, Priority priority,
      Duration timeout) {
    return InMemoryConcurrencyLimiter.waitFor(acquireAsync(key, flow, weight, priority, timeout));
  }

  @Override
  public CompletableFuture<Acquisition> acquireAsync(String key, int weight, Priority priority,
      Duration timeout) {
    return acquireAsync(key, null, weight, priority, timeout);
  }

  /** With fair queuing, this instance's waiters of the key are fair among their flows. */
  @Override
  public CompletableFuture<Acquisition> acquireAsync(String key, String flow, int weight,
      Priority priority, Duration timeout) {
    return counters.counted(waitFor(key, flow, weight, priority, timeout), priority);
  }

  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private CompletableFuture<Acquisition> waitFor(String key, String flow, int weight,
      Priority priority, Duration timeout) {
    check(key, weight, priority);
    InMemoryConcurrencyLimiter.checkTimeout(timeout);
    if (closed.get()) {
      return CompletableFuture.completedFuture(new Acquisition(null, Refusal.CLOSED, 0, 0, 0, 0));
    }
    int limit = currentLimit(key);
    Acquisition refused = refusedAtOnce(key, weight, priority, limit);
    if (refused != null) {
      return CompletableFuture.completedFuture(refused);
    }
    CompletableFuture<Acquisition> future = new CompletableFuture<>();
    long now = clock.nanoTime();
    long timeoutNanos = Saturating.nanos(timeout);
    Waiter w = new Waiter(weight, priority, limit, now,
        Saturating.add(now, timeoutNanos), future, flow);
    Waiters ws = waiting.get(key);
    boolean behindOthers = false;
    if (ws != null) {
      synchronized (ws) {
        behindOthers = ws.atOrAbove(priority.ordinal());
      }
    }
    if (behindOthers) {   // this JVM's waiters before it go first
      enqueue(key, w, timeoutNanos);
      return future;
    }
    // nobody here before it: the store is asked at once, and the caller waits only if refused
    CircuitBreaker b = breaker(key);
    if (!b.allowsCall()) {
      future.complete(degraded(key, weight, priority, limit));
      return future;
    }
    long id = ids.incrementAndGet();
    CompletableFuture<PermitReply> asked;
    try {
      asked = store.acquireAsync(key, storeId(id), weight, settings.ceiling(limit, priority),
          leaseMillis);
    } catch (RuntimeException e) {
      asked = CompletableFuture.failedFuture(e);
    }
    asked.whenCompleteAsync((reply, failure) -> {
      if (failure != null) {
        failed(b, failure);
        giveBack(key, id, weight);
        deliver(future, degraded(key, weight, priority, limit));
        return;
      }
      b.success();
      long t = clock.nanoTime();
      Acquisition a = answer(key, id, weight, priority, limit, reply, now, t, 0);
      if (a.isAcquired() || timeoutNanos == 0) {
        if (a.isAcquired()) {
          chargeGranted(key, flow, priority, weight, t);
        }
        deliver(future, a);   // no wait: the permit, or the reason now
      } else if (t - w.deadline >= 0) {
        future.complete(new Acquisition(null, Refusal.TIMED_OUT, limit, a.inFlight(), 0, t - now));
      } else {
        enqueue(key, w, w.deadline - t);
      }
    });
    return future;
  }

  /**
   * Fair queuing counts a permit granted at once in its flow's demand, while the key has waiters
   * here (their queues keep the demand; they go with the last waiter).
   */
  private void chargeGranted(String key, String flow, Priority priority, int weight, long now) {
    Waiters ws = waiting.get(key);
    if (ws != null) {
      synchronized (ws) {
        ws.queue.granted(flow, priority.ordinal(), weight, now);
      }
    }
  }

  /**
   * Whether a wait for {@code ahead} weight (the waiters before it here, and its own) on a key of
   * {@code limit} would outlast {@code timeoutNanos}, from the key's mean hold time in this JVM,
   * as in memory. Permits held elsewhere in the fleet turn over at the same pace, and other
   * instances' waiters also compete for them, so the estimate is short of the real wait, never
   * past it: what it refuses would have timed out.
   */
  private boolean hopeless(String key, int ahead, int limit, long timeoutNanos) {
    HoldTime h = holdTimes == null ? null : holdTimes.get(key);
    if (h == null) {
      return false;
    }
    synchronized (h) {
      return h.hopeless(ahead, limit, timeoutNanos);
    }
  }

  @Override
  public Duration usefulWait(String key, Duration deadline) {
    Objects.requireNonNull(deadline, "deadline");
    HoldTime h = holdTimes == null ? null : holdTimes.get(Objects.requireNonNull(key, "key"));
    if (h == null) {
      return deadline;
    }
    synchronized (h) {
      return h.usefulWait(deadline);
    }
  }

  /** Learns how long the key's permits are held, from one that ended {@code outcome}. */
  private void learnHold(String key, long nanos, Outcome outcome) {
    if (holdTimes == null) {
      return;
    }
    HoldTime h = holdTimes.get(key);
    if (h == null) {
      if (holdTimes.size() >= maximumKeys) {
        holdTimes.clear();   // bounded: estimates are learned again
      }
      h = holdTimes.computeIfAbsent(key, k -> new HoldTime());
    }
    synchronized (h) {
      h.learn(nanos, outcome);
    }
  }

  /** Completes {@code f} with {@code a}; a permit its caller no longer waits for is ended. */
  private static void deliver(CompletableFuture<Acquisition> f, Acquisition a) {
    if (!f.complete(a) && a.isAcquired()) {
      a.permit().end(Outcome.IGNORED);
    }
  }

  /** Queues {@code w} among its key's waiters (or refuses it: queue or keys full). */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void enqueue(String key, Waiter w, long timeoutNanos) {
    List<Runnable> after = new ArrayList<>(0);
    Acquisition refused = null;
    Waiters ws;
    for (;;) {
      ws = waiting.get(key);
      if (ws == null) {
        if (waitingKeys.incrementAndGet() > maximumKeys) {
          waitingKeys.decrementAndGet();
          w.future.complete(new Acquisition(null, Refusal.KEYS_FULL, w.limit, 0, 0, 0));
          return;
        }
        Waiters fresh = new Waiters(key);
        ws = waiting.putIfAbsent(key, fresh);
        if (ws != null) {
          waitingKeys.decrementAndGet();
        } else {
          ws = fresh;
        }
      }
      synchronized (ws) {
        if (ws.dead) {
          continue;
        }
        int p = w.priority;
        // CoDel: a standing queue takes nobody more; a wait that would outlast its timeout is
        // refused now
        Refusal now = ws.queue.shedding() ? Refusal.OVERLOADED
            : hopeless(key, ws.queue.sizeAtOrAbove(p) + w.weight, w.limit, timeoutNanos)
            ? Refusal.DEADLINE : null;
        if (now != null) {
          refused = new Acquisition(null, now, w.limit, ws.lastInFlight, ws.queue.size(),
              clock.nanoTime() - w.since);
          ws.forgetIfIdle();
          break;
        }
        Waiter evicted = !ws.queue.hasRoomFor(w) ? null
            : ws.queue.size() >= maxWaiters ? ws.queue.evictFor(p) : null;
        if (!ws.queue.hasRoomFor(w) || ws.queue.size() >= maxWaiters) {
          refused = new Acquisition(null, Refusal.QUEUE_FULL, w.limit, ws.lastInFlight,
              ws.queue.size(), clock.nanoTime() - w.since);
          ws.forgetIfIdle();
        } else {
          if (evicted != null) {
            Acquisition a = new Acquisition(null, Refusal.QUEUE_FULL, evicted.limit,
                ws.lastInFlight, ws.queue.size(), clock.nanoTime() - evicted.since);
            after.add(() -> evicted.future.complete(a));
          }
          ws.queue.add(w);
        }
      }
      break;
    }
    after.forEach(Runnable::run);
    if (refused != null) {
      w.future.complete(refused);
      return;
    }
    Waiters queue = ws;
    if (timeoutNanos > 0 && timeoutNanos != Long.MAX_VALUE) {
      try {
        scheduler.schedule(() -> queue.timedOut(w), timeoutNanos);
      } catch (RuntimeException e) {
        // no timer: the wait then ends at the first refusal past its deadline
      }
    }
    w.future.whenComplete((a, failure) -> {
      if (w.future.isCancelled()) {
        queue.leave(w);
      }
    });
    pump(ws);
  }

  /**
   * Asks the store for the permit of {@code ws}'s head waiter, unless an ask is in flight (which
   * then asks again when it ends).
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void pump(Waiters ws) {
    Waiter next;
    List<Runnable> shed = new ArrayList<>(0);
    synchronized (ws) {
      if (ws.pumping) {
        ws.again = true;
        return;
      }
      long now = clock.nanoTime();
      for (;;) {
        next = ws.head();
        // CoDel measures each wait as its waiter is asked for; while the queue sheds, a waiter
        // past the target is refused instead
        if (next == null || !ws.queue.shedOnDequeue(now - next.since, now)) {
          break;
        }
        ws.remove(next);
        Waiter refused = next;
        Acquisition a = new Acquisition(null, Refusal.OVERLOADED, next.limit, ws.lastInFlight,
            ws.queue.size(), now - next.since);
        shed.add(() -> refused.future.complete(a));
      }
      if (next == null) {
        ws.forgetIfIdle();
      } else {
        ws.pumping = true;
        ws.again = false;
      }
    }
    shed.forEach(Runnable::run);
    if (next == null) {
      return;
    }
    Waiter head = next;
    CircuitBreaker b = breaker(ws.key);
    if (!b.allowsCall()) {
      ws.served(head, degraded(ws.key, head.weight, head.level(), head.limit));
      return;
    }
    long id = ids.incrementAndGet();
    CompletableFuture<PermitReply> asked;
    try {
      int limitNow = adaptiveLimits == null ? head.limit : currentLimit(ws.key);
      asked = store.acquireAsync(ws.key, storeId(id), head.weight,
          settings.ceiling(limitNow, head.level()), leaseMillis);
    } catch (RuntimeException e) {
      asked = CompletableFuture.failedFuture(e);
    }
    asked.whenCompleteAsync((reply, failure) -> {
      if (failure != null) {
        failed(b, failure);
        giveBack(ws.key, id, head.weight);
        ws.served(head, degraded(ws.key, head.weight, head.level(), head.limit));
        return;
      }
      b.success();
      long now = clock.nanoTime();
      Acquisition a = answer(ws.key, id, head.weight, head.level(), head.limit, reply,
          head.since, now, 0);
      if (a.isAcquired()) {
        ws.served(head, a);
      } else {
        ws.refused(head, reply.inFlight(), now);
      }
    });
  }

  // ------------------------------------------------------------------------------ failures

  private CircuitBreaker breaker(String key) {
    return breakers.of(store::permitFailureDomain, key);
  }

  private void failed(CircuitBreaker b, Throwable failure) {
    breakers.callFailed(b, failure);
  }

  /** The most cancels of failed acquires pending at once; past it, a lease gives them back. */
  static final int MAX_PENDING_CANCELS = 100_000;
  private static final long FIRST_RETRY_NANOS = 25_000_000L;
  private static final long LAST_RETRY_NANOS = 1_000_000_000L;

  /**
   * Gives back permit {@code id} of {@code key}, whose acquire failed here and so may have run on
   * the store, or may run there later (or whose release failed, or was not sent while the breaker
   * was open): the store's cancel forgets it if held, or refuses the acquire if that comes after. Sent at once (on a store of one connection it then runs right
   * after the acquire), then again with backoff (25 ms doubling to 1 s) until the store answers,
   * for at most a lease: by then the store has let the permit go by itself.
   */
  private void giveBack(String key, long id, int weight) {
    giveBack(key, storeId(id), weight);
  }

  private void giveBack(String key, String storeId, int weight) {
    if (pendingCancels.incrementAndGet() > MAX_PENDING_CANCELS) {
      pendingCancels.decrementAndGet();   // bounded: the lease gives this one back
      return;
    }
    cancel(key, storeId, weight, Saturating.add(clock.nanoTime(),
        leaseNanos), FIRST_RETRY_NANOS);
  }

  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void cancel(String key, String storeId, int weight, long until, long backoff) {
    CompletableFuture<PermitReply> sent;
    try {
      sent = store.cancelAsync(key, storeId, weight, leaseMillis);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenCompleteAsync((reply, failure) -> {
      if (failure == null) {
        pendingCancels.decrementAndGet();
        breaker(key).success();   // the store answers: decisions may go to it again at once
        wake(key);                // and the permit, if it was held, is room for a waiter
        return;
      }
      long now = clock.nanoTime();
      if (closed.get() || now + backoff - until >= 0) {
        pendingCancels.decrementAndGet();   // the store lets it go when its lease ends
        return;
      }
      try {
        scheduler.schedule(() -> cancel(key, storeId, weight, until,
            Math.min(LAST_RETRY_NANOS, backoff * 2)), backoff);
      } catch (RuntimeException e) {
        pendingCancels.decrementAndGet();
      }
    });
  }

  /** Cancels of failed acquires sent and not yet answered by the store (tests). */
  long pendingCancels() {
    return pendingCancels.get();
  }

  /** Asks the store again for the waiters that room on {@code key} may serve here. */
  private void wake(String key) {
    if (group != null) {   // a permit back in a group may serve any key of the group here
      String g = group.groupOf(key);
      for (Waiters ws : waiting.values()) {
        if (g.equals(group.groupOf(ws.key))) {
          pump(ws);
        }
      }
      return;
    }
    Waiters ws = waiting.get(key);
    if (ws != null) {
      pump(ws);
    }
  }

  /** The failure policy's answer, marked degraded. */
  private Acquisition degraded(String key, int weight, Priority priority, int limit) {
    breakers.degradedAnswer();
    switch (onFailure) {
      case FAIL_OPEN: {
        long now = clock.nanoTime();
        counters.granted(weight);
        Permit p = new Permit(uncounted, key, ids.incrementAndGet(), weight, now,
            Saturating.add(now, leaseNanos), 0);
        return new Acquisition(p, null, limit, 0, 0, 0, true);
      }
      case FALLBACK_IN_MEMORY:
        return fallback.tryAcquire(key, weight, priority).degraded();
      default:
        return new Acquisition(null, Refusal.STORE_UNAVAILABLE, limit, 0, 0, 0, true);
    }
  }

  @Override
  public int limit(String key) {
    return currentLimit(key);
  }

  @Override
  public AdaptiveLimit adaptiveLimit(String key) {
    return adaptiveLimits == null ? null : adaptive.get(key);
  }

  /** The key's limit now: its adaptive limit's (made on first use), or the fixed one. */
  private int currentLimit(String key) {
    if (adaptiveLimits == null) {
      return InMemoryConcurrencyLimiter.limitOf(limitOfKey, key);
    }
    AdaptiveLimit a = adaptive.get(key);
    if (a == null) {
      if (adaptive.size() >= maximumKeys) {   // bounded: an arbitrary key's estimate goes
        for (String k : adaptive.keySet()) {
          adaptive.remove(k);
          break;
        }
      }
      a = adaptive.computeIfAbsent(key, k -> adaptiveLimits.get());
    }
    return Math.max(1, a.limit());
  }

  /** As {@link ConcurrencyLimiter#stats}; in flight includes the in-memory fallback's permits. */
  @Override
  public ConcurrencyStats stats() {
    ConcurrencyStats own = counters.stats(waiting.size(), breakers.storeErrors(),
        breakers.degradedAnswers(), breakers.anyOpen(), clock.nanoTime());
    if (fallback == null) {
      return own;
    }
    ConcurrencyStats local = fallback.stats();
    return new ConcurrencyStats(own.acquired(), refusals(own), ends(own),
        own.inFlight() + local.inFlight(), own.waiting(), own.keys(), own.storeErrors(),
        own.degraded(), own.circuitOpen(), own.levels());
  }

  private static long[] refusals(ConcurrencyStats s) {
    long[] r = new long[Refusal.values().length];
    for (Refusal why : Refusal.values()) {
      r[why.ordinal()] = s.refused(why);
    }
    return r;
  }

  private static long[] ends(ConcurrencyStats s) {
    long[] e = new long[Outcome.values().length];
    for (Outcome o : Outcome.values()) {
      e[o.ordinal()] = s.ended(o);
    }
    return e;
  }

  // ------------------------------------------------------------------------------ the rest

  /**
   * The id the store knows permit {@code id} by: this limiter's random part, the number, and a
   * keyed hash of the number (SipHash-2-4 under this limiter's random key), so that knowing one
   * permit's id tells nothing of another's.
   */
  private String storeId(long id) {
    return instance + "-" + Long.toString(id, 36) + "-"
        + Long.toUnsignedString(sipHash(idKey0, idKey1, id), 36);
  }

  /** SipHash-2-4 of one 64-bit word under the key (k0, k1). */
  static long sipHash(long k0, long k1, long m) {
    long v0 = k0 ^ 0x736f6d6570736575L;
    long v1 = k1 ^ 0x646f72616e646f6dL;
    long v2 = k0 ^ 0x6c7967656e657261L;
    long v3 = k1 ^ 0x7465646279746573L;
    long[] v = {v0, v1, v2, v3};
    v[3] ^= m;
    sipRound(v);
    sipRound(v);
    v[0] ^= m;
    long last = 8L << 56;   // the length, 8 bytes, in the last word's top byte
    v[3] ^= last;
    sipRound(v);
    sipRound(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++) {
      sipRound(v);
    }
    return v[0] ^ v[1] ^ v[2] ^ v[3];
  }

  private static void sipRound(long[] v) {
    v[0] += v[1];
    v[1] = Long.rotateLeft(v[1], 13);
    v[1] ^= v[0];
    v[0] = Long.rotateLeft(v[0], 32);
    v[2] += v[3];
    v[3] = Long.rotateLeft(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = Long.rotateLeft(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = Long.rotateLeft(v[1], 17);
    v[1] ^= v[2];
    v[2] = Long.rotateLeft(v[2], 32);
  }

  /** The longest shared id {@link #sharedPermit} takes (MySQL keeps at most 255 bytes). */
  static final int MAX_SHARED_ID = 255;

  @Override
  public Permit sharedPermit(String key, String sharedId, int weight) {
    StoreKeys.check(key);
    if (weight < 1) {
      throw new IllegalArgumentException("weight must be at least 1 but was " + weight);
    }
    if (sharedId == null || sharedId.isEmpty() || sharedId.length() > MAX_SHARED_ID
        || !sharedId.chars().allMatch(c -> c > ' ' && c < 0x7f)) {
      throw new IllegalArgumentException("a shared permit id is 1 to " + MAX_SHARED_ID
          + " printable ASCII characters but was " + (sharedId == null ? "null"
          : "'" + (sharedId.length() > 40 ? sharedId.substring(0, 40) + "..." : sharedId) + "'"));
    }
    if (store instanceof GroupedPermits grouped) {
      grouped.terms(key);
    }
    long now = clock.nanoTime();
    return new Permit(new Adopted(sharedId), key, -1, weight, now,
        Saturating.add(now, leaseNanos), 0);
  }

  /**
   * A permit named by its shared id ({@link #sharedPermit}): renewed and released on the store; its
   * end counts here, and is told to nobody (its hold time is the granting instance's to know).
   */
  private final class Adopted implements Permit.Owner {
    private final String id;

    Adopted(String id) {
      this.id = id;
    }

    @Override
    public String sharedId(Permit p) {
      return id;
    }

    @Override
    public boolean renew(Permit p) {
      return renewOnStore(p, id);
    }

    @Override
    public boolean ended(Permit p, Outcome outcome) {
      boolean held = releaseOnStore(p, id);
      if (held) {
        counters.endedElsewhere(outcome);
        wake(p.key());
      }
      return held;
    }
  }

  private void check(String key, int weight, Priority priority) {
    InMemoryConcurrencyLimiter.check(key, weight, priority);
    StoreKeys.check(key);
    if (store instanceof GroupedPermits grouped) {
      grouped.terms(key);   // a key its group cannot place is the caller's error, not the store's
    }
  }

  /** The store's count of the key's weight in flight (a store failure is thrown). */
  @Override
  public int inFlight(String key) {
    return store.inFlight(StoreKeys.check(key));
  }

  @Override
  public int waiting(String key) {
    Waiters ws = waiting.get(key);
    if (ws == null) {
      return 0;
    }
    synchronized (ws) {
      return ws.queue.size();
    }
  }

  /** Keys with waiters in this JVM (the permits themselves are the store's). */
  @Override
  public long keys() {
    return waiting.size();
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<Runnable> after = new ArrayList<>();
    for (Waiters ws : waiting.values()) {
      synchronized (ws) {
        for (Waiter w : ws.queue.clear()) {
          Acquisition a = new Acquisition(null, Refusal.CLOSED, w.limit, ws.lastInFlight, 0,
              clock.nanoTime() - w.since);
          after.add(() -> w.future.complete(a));
        }
      }
    }
    after.forEach(Runnable::run);
    if (fallback != null) {
      fallback.close();
    }
  }

  @Override
  public String toString() {
    return "ConcurrencyLimiter[" + store + ", " + onFailure + "]";
  }

  /** Extends the lease of permit {@code id} on the store; false if it ended or the store fails. */
  private boolean renewOnStore(Permit p, String id) {
    if (!p.isActive()) {
      return false;
    }
    CircuitBreaker b = breaker(p.key());
    if (!b.allowsCall()) {
      return false;
    }
    try {
      long now = clock.nanoTime();
      PermitReply r = store.renew(p.key(), id, p.weight(), leaseMillis);
      b.success();
      if (r.done()) {
        p.expiresAt = Saturating.add(now, leaseNanos);
      }
      return r.done();
    } catch (RuntimeException e) {
      failed(b, e);
      return false;
    }
  }

  /**
   * Releases permit {@code id} on the store: whether the store held it; true when the store
   * could not be asked (the release is then given back as soon as the store answers again).
   */
  private boolean releaseOnStore(Permit p, String id) {
    CircuitBreaker b = breaker(p.key());
    if (b.allowsCall()) {
      try {
        boolean held = store.release(p.key(), id, p.weight()).done();
        b.success();
        return held;
      } catch (RuntimeException e) {
        failed(b, e);
      }
    }
    giveBack(p.key(), id, p.weight());
    return true;
  }

  /** Permits counted by the store: renewed and released there. */
  private final class Shared implements Permit.Owner {
    @Override
    public String sharedId(Permit p) {
      return storeId(p.id());
    }

    @Override
    public boolean renew(Permit p) {
      return renewOnStore(p, storeId(p.id()));
    }

    @Override
    public boolean ended(Permit p, Outcome outcome) {
      return finish(p, outcome, releaseOnStore(p, storeId(p.id())));
    }

    @Override
    public CompletableFuture<Boolean> endedAsync(Permit p, Outcome outcome) {
      CircuitBreaker b = breaker(p.key());
      CompletableFuture<PermitReply> released;
      if (!b.allowsCall()) {
        released = CompletableFuture.completedFuture(null);
      } else {
        try {
          released = store.releaseAsync(p.key(), storeId(p.id()), p.weight());
        } catch (RuntimeException e) {
          released = CompletableFuture.failedFuture(e);
        }
      }
      // on the common pool, not the store client's thread: a listener may call the store
      return released.handleAsync((reply, failure) -> {
        boolean held = true;
        if (failure != null) {
          failed(b, failure);
          giveBack(p.key(), p.id(), p.weight());   // as soon as the store answers again
        } else if (reply == null) {
          giveBack(p.key(), p.id(), p.weight());   // the breaker is open: when it answers
        } else {
          b.success();
          held = reply.done();
        }
        return finish(p, outcome, held);
      });
    }

    /**
   * Tells the end (EXPIRED if the store had let it go) and wakes the key's waiters here (in a
   * group, the waiters of every key of its group).
   */
    private boolean finish(Permit p, Outcome outcome, boolean held) {
      long now = clock.nanoTime();
      long heldNanos = Math.max(0,
          (held ? now : Math.min(now, p.expiresAt)) - p.acquiredAtNanos());
      PermitEnd end = new PermitEnd(p.key(), p.weight(), heldNanos,
          held ? outcome : Outcome.EXPIRED, p.inFlightAtStart(), p.waitedNanos,
          clock.pausedNanos(p.acquiredAtNanos() - heldNanos, p.acquiredAtNanos() + heldNanos));
      learnHold(p.key(), end.heldNanos(), end.outcome());
      if (adaptiveLimits != null) {
        AdaptiveLimit a = adaptive.get(p.key());
        if (a != null) {
          a.onEnd(end, now);   // this instance learns from its own permits
        }
      }
      InMemoryConcurrencyLimiter.tell(listener, end);
      wake(p.key());
      return held;
    }
  }

  /** FAIL_OPEN's permits: counted nowhere; their end is still told. */
  private final class Uncounted implements Permit.Owner {
    @Override
    public boolean renew(Permit p) {
      if (!p.isActive()) {
        return false;
      }
      p.expiresAt = Saturating.add(clock.nanoTime(), leaseNanos);
      return true;
    }

    @Override
    public boolean ended(Permit p, Outcome outcome) {
      long now = clock.nanoTime();
      long heldNanos = Math.max(0, now - p.acquiredAtNanos());
      InMemoryConcurrencyLimiter.tell(listener, new PermitEnd(p.key(), p.weight(), heldNanos,
          outcome, 0, p.waitedNanos, clock.pausedNanos(p.acquiredAtNanos() - heldNanos, now)));
      return true;
    }
  }

  /** An acquisition waiting in this JVM: with the limit it asks under, and its deadline. */
  private static final class Waiter extends WaitQueues.Entry {
    final int limit;
    final long deadline;

    Waiter(int weight, Priority priority, int limit, long since, long deadline,
        CompletableFuture<Acquisition> future, String flow) {
      super(weight, priority.ordinal(), since, future, flow);
      this.limit = limit;
      this.deadline = deadline;
    }
  }

  /** One key's waiters in this JVM, under this object's monitor. */
  private final class Waiters {
    final String key;
    /** The waiters, a queue per priority. */
    final WaitQueues<Waiter> queue = settings.waitQueue(counters);
    /** A store call for the head waiter is in flight. */
    boolean pumping;
    /** A permit was released while the call was in flight: ask again at once. */
    boolean again;
    boolean pollScheduled;
    boolean dead;
    /** The weight in flight the store last reported. */
    int lastInFlight;

    Waiters(String key) {
      this.key = key;
    }

    /**
     * Under the monitor: whether a waiter the key's limit of now could serve waits at or above
     * priority {@code p}; with an adaptive limit, one whose weight is above its share of the limit
     * as it is now waits for the limit to grow, and holds up nobody meanwhile.
     */
    boolean atOrAbove(int p) {
      return adaptiveLimits == null ? queue.atOrAbove(p)
          : queue.atOrAbove(p, servable(currentLimit(key)));
    }

    /** Under the monitor: the next waiter to serve (highest priority, then queue order). */
    Waiter head() {
      return adaptiveLimits == null ? queue.next() : queue.next(servable(currentLimit(key)));
    }

    private Predicate<Waiter> servable(int limit) {
      return w -> w.weight <= settings.ceiling(limit, w.level());
    }

    private boolean remove(Waiter w) {
      return queue.remove(w);
    }

    /**
     * The head waiter's answer came (a permit, or the failure policy's): on to the next. A
     * permit asked for a waiter that a higher priority has come before since goes to the new
     * head when it weighs the same (the store does not know who holds it), so that an answer in
     * flight never serves a lower priority first.
     */
    void served(Waiter asked, Acquisition a) {
      Waiter w = asked;
      synchronized (this) {
        Waiter now = a.isAcquired() ? head() : null;
        if (now != null && now != asked && now.priority < asked.priority
            && now.weight == asked.weight) {
          w = now;
          a = new Acquisition(a.permit(), null, now.limit, a.inFlight(), queue.size() - 1,
              clock.nanoTime() - now.since);
        }
        if (remove(w) && a.isAcquired()) {
          counters.dispatched(w.priority);
        }
        pumping = false;
      }
      deliver(w.future, a);   // a permit its caller left meanwhile is ended
      pump(this);
    }

    /** The store refused the head waiter: it waits on, unless its time is up. */
    void refused(Waiter w, int inFlight, long now) {
      Acquisition timedOut = null;
      boolean askAgain;
      synchronized (this) {
        lastInFlight = inFlight;
        pumping = false;
        if (now - w.deadline >= 0 && remove(w)) {
          timedOut = new Acquisition(null, Refusal.TIMED_OUT, w.limit, inFlight, queue.size(),
              now - w.since);
        }
        askAgain = again || timedOut != null;
        if (!askAgain && !pollScheduled && queue.size() > 0) {
          pollScheduled = true;
          try {
            scheduler.schedule(this::poll, pollNanos);
          } catch (RuntimeException e) {
            pollScheduled = false;
          }
        }
      }
      if (timedOut != null) {
        w.future.complete(timedOut);
      }
      if (askAgain) {
        pump(this);
      }
    }

    private void poll() {
      synchronized (this) {
        pollScheduled = false;
      }
      pump(this);
    }

    void timedOut(Waiter w) {
      Acquisition a;
      synchronized (this) {
        if (!remove(w)) {
          return;
        }
        long now = clock.nanoTime();
        queue.shedOnDequeue(now - w.since, now);   // CoDel measures the waits that ran out too
        a = new Acquisition(null, Refusal.TIMED_OUT, w.limit, lastInFlight, queue.size(),
            now - w.since);
      }
      w.future.complete(a);
      pump(this);
    }

    void leave(Waiter w) {
      boolean left;
      synchronized (this) {
        left = remove(w);
      }
      if (left) {
        pump(this);
      }
    }

    /** Under the monitor: leaves the map when nobody waits and nothing is in flight for it. */
    void forgetIfIdle() {
      if (queue.size() == 0 && !pumping && !pollScheduled && !dead) {
        dead = true;
        if (waiting.remove(key, this)) {
          waitingKeys.decrementAndGet();
        }
      }
    }
  }
}

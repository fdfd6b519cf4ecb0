package dev.sluice.concurrency;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import dev.sluice.internal.KeyTable;
import dev.sluice.internal.Saturating;
import dev.sluice.spi.PermitGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/*
 * The in-memory concurrency limiter.
 *
 * Each key has a KeyState, guarded by its own monitor: the weight in flight, the permits in flight
 * (for their leases) and the waiters. Every change of the weight in flight happens under that
 * monitor, so the weight in flight never exceeds the limit at any instant, whatever the threads.
 * Futures are completed and listeners told only after the monitor is released, so a caller's
 * callback never runs holding it.
 *
 * Leases: a permit whose lease has run out is taken back (Outcome.EXPIRED) by the next
 * acquisition on its key, and by a sweep of every key every half lease. Keys: a key enters the
 * map when first acquired, and leaves it when idle (nothing in flight, nobody waiting) for a lease
 * time, at a sweep or when a new key needs room; the number of keys is bounded exactly (a slot is
 * reserved before a key is mapped). A key with permits in flight is never evicted (its accounting
 * would be lost): a new key past the bound, when no key is idle, is refused (KEYS_FULL).
 *
 * Groups (ConcurrencyGroup): the keys of one group share one monitor, the group's, which also
 * holds the group's weight in flight; every change of a key's weight changes the group's in the
 * same step, so the group's limit holds at every instant too. A permit that comes back in a
 * group serves the waiters of every key of the group that has any; a grouped acquisition first
 * takes back the ended leases of every key of the group. A group lives while it has keys.
 */
final class InMemoryConcurrencyLimiter implements ConcurrencyLimiter {
  private final ToIntFunction<String> limitOfKey;
  private final long leaseNanos;
  private final int maxWaiters;
  private final long maximumKeys;
  private final Clock clock;
  private final Scheduler scheduler;
  private final Consumer<PermitEnd> listener;
  private final Counters counters = new Counters();
  private final ConcurrencyLimiter.Builder settings;
  /** The keys, bounded; a key holding permits or waiters refuses to be evicted. */
  private final KeyTable table;
  /**
   * New keys are made under one of these, by the key's hash: callers racing on a new key make one
   * state, and one adaptive limit (a supplier that registers a meter is called once per key).
   */
  private final Object[] newKeyLocks = newLocks(64);
  /** The groups with keys, when the limiter has a {@link ConcurrencyGroup}. */
  private final ConcurrentHashMap<String, GroupState> groups = new ConcurrentHashMap<>();
  private final ConcurrencyGroup group;
  /** Makes each key's adaptive limit; null for fixed limits. */
  private final Supplier<AdaptiveLimit> adaptiveLimits;
  private final boolean deadlineAware;
  /**
   * Whether a permit object of weight 1 at normal priority may be a lane slot (not with fair
   * queuing, which counts each grant's flow under the monitor).
   */
  private final boolean lanePermits;
  private final AtomicLong ids = new AtomicLong();
  private final AtomicBoolean closed = new AtomicBoolean();

  InMemoryConcurrencyLimiter(ConcurrencyLimiter.Builder b) {
    this.limitOfKey = b.limitOfKey();
    this.leaseNanos = b.lease.toNanos();
    this.maxWaiters = b.maxWaiters;
    this.maximumKeys = b.maximumKeys;
    this.clock = b.clock;
    this.scheduler = b.scheduler;
    this.listener = b.onPermitEnd;
    this.settings = b;
    this.group = b.group;
    this.adaptiveLimits = b.adaptive;
    this.deadlineAware = b.deadlineAware;
    this.lanePermits = b.fair == null;
    this.table = new KeyTable(clock, maximumKeys);
    scheduleSweep();
  }

  @Override
  public Acquisition tryAcquire(String key, int weight, Priority priority) {
    check(key, weight, priority);
    if (weight == 1 && priority == Priority.NORMAL && lanePermits) {
      Acquisition a = onTheLane(key);
      if (a != null) {
        return a;
      }
    }
    return counters.counted(acquire(key, null, weight, priority, -1, null), priority);
  }

  /**
   * A permit object from the key's lane: lock-free while the lane has a FREE slot and nobody
   * waits, else the monitor opens slots if the key has room. Null when it has none, or the key
   * is new or takes no lane: the general path answers then (and counts the answer).
   */
  private Acquisition onTheLane(String key) {
    if (closed.get()) {
      return null;
    }
    KeyState s = state(key);
    if (s == null || !s.laneable) {
      return null;
    }
    Lane l = s.lane;
    if (l != null && !l.contended) {
      long now = clock.nanoTime();
      long h = l.tryAcquire(now);
      if (h >= 0) {
        counters.laneAcquired();
        return s.lanePermit(h, now);
      }
    }
    Acquisition a = null;
    List<Runnable> after;
    synchronized (s.lock) {
      if (s.dead) {
        return null;
      }
      long now = clock.nanoTime();
      s.lastUsed = now;
      s.expireAll(now);
      long h = s.takeLaneSlot(now);
      if (h >= 0) {
        counters.laneAcquired();
        a = s.lanePermit(h, now);
      }
      after = s.takeLater();
    }
    KeyState.run(after);
    return a;
  }

  @Override
  public Duration usefulWait(String key, Duration deadline) {
    Objects.requireNonNull(deadline, "deadline");
    KeyState s = state(Objects.requireNonNull(key, "key"));
    if (s == null) {
      return deadline;
    }
    synchronized (s.lock) {
      return s.holdTime.usefulWait(deadline);
    }
  }

  @Override
  public long tryAcquireHandle(String key) {
    check(key, 1, Priority.NORMAL);
    if (closed.get()) {
      counters.refused(Refusal.CLOSED);
      return NO_PERMIT;
    }
    KeyState known = state(key);
    if (known != null) {
      Lane lane = known.lane;
      if (lane != null && !lane.contended) {   // the lock-free lane, while nobody waits
        long h = lane.tryAcquire(clock.nanoTime());
        if (h >= 0) {
          counters.laneAcquired();
          return h;
        }
      }
    }
    for (;;) {
      KeyState s = state(key);
      if (s == null) {
        s = newKey(key);
        if (s == null) {
          counters.refused(Refusal.KEYS_FULL);
          return NO_PERMIT;
        }
      }
      long handle;
      List<Runnable> after;
      synchronized (s.lock) {
        if (s.dead) {
          table.remove(key, s);   // helps it leave, and looks again
          continue;
        }
        long now = clock.nanoTime();
        s.lastUsed = now;
        s.expireAll(now);
        handle = s.acquireHandle(now);
        after = s.takeLater();
      }
      KeyState.run(after);
      return handle;
    }
  }

  @Override
  public boolean release(String key, long handle, Outcome outcome) {
    checkRelease(outcome);
    KeyState s = state(key);
    if (s == null) {
      return false;
    }
    if (Lane.isLane(handle)) {
      Lane lane = s.lane;
      if (lane == null || !lane.release(handle)) {
        return false;
      }
      counters.laneEnded(outcome);
      if (lane.contended) {
        s.serveFromLane();   // waiters: the slot just freed is theirs
      }
      return true;
    }
    return s.releaseHandle(handle, outcome);
  }

  /** A release's outcome: EXPIRED is the limiter's to give. */
  static void checkRelease(Outcome outcome) {
    if (outcome == null || outcome == Outcome.EXPIRED) {
      throw new IllegalArgumentException("a permit is released as SUCCESS, DROPPED or IGNORED"
          + " but was " + outcome);
    }
  }

  @Override
  public Acquisition acquire(String key, int weight, Priority priority, Duration timeout) {
    return waitFor(acquireAsync(key, null, weight, priority, timeout));
  }

  @Override
  public Acquisition acquire(String key, String flow, int weight, Priority priority,
      Duration timeout) {
    return waitFor(acquireAsync(key, flow, weight, priority, timeout));
  }

  /**
   * The acquisition {@code f} completes with, waiting on this thread; an interrupt ends the wait
   * ({@link Refusal#INTERRUPTED}, the interrupt kept), and a permit granted as it came is ended.
   */
  static Acquisition waitFor(CompletableFuture<Acquisition> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Acquisition interrupted = new Acquisition(null, Refusal.INTERRUPTED, 0, 0, 0, 0);
      if (f.complete(interrupted)) {   // still waiting: it leaves the queue at the next serve
        Thread.currentThread().interrupt();
        return interrupted;
      }
      // granted (or refused) just as the interrupt came: the permit is not wanted any more
      Acquisition a = f.join();
      if (a.isAcquired()) {
        a.permit().end(Outcome.IGNORED);
      }
      Thread.currentThread().interrupt();
      return new Acquisition(null, Refusal.INTERRUPTED, a.limit(), a.inFlight(), a.waiting(),
          a.waitedNanos());
    } catch (ExecutionException e) {
      throw new IllegalStateException("acquiring failed unexpectedly", e.getCause());
    }
  }

  @Override
  public CompletableFuture<Acquisition> acquireAsync(String key, int weight, Priority priority,
      Duration timeout) {
    return acquireAsync(key, null, weight, priority, timeout);
  }

  @Override
  public CompletableFuture<Acquisition> acquireAsync(String key, String flow, int weight,
      Priority priority, Duration timeout) {
    check(key, weight, priority);
    checkTimeout(timeout);
    CompletableFuture<Acquisition> future = new CompletableFuture<>();
    Acquisition now = acquire(key, flow, weight, priority, Saturating.nanos(timeout), future);
    if (now != null) {
      future.complete(now);
    }
    return counters.counted(future, priority);
  }

  static void checkTimeout(Duration timeout) {
    if (timeout == null || timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be zero or positive but was " + timeout);
    }
  }

  static void check(String key, int weight, Priority priority) {
    if (priority == null) {
      throw new IllegalArgumentException("priority must be one of CRITICAL, NORMAL, SHEDDABLE but"
          + " was null");
    }
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException("key must be a non-empty string but was "
          + (key == null ? "null" : "''"));
    }
    if (weight < 1) {
      throw new IllegalArgumentException("weight must be at least 1 but was " + weight);
    }
  }

  /**
   * The acquisition now, or null when {@code waiter} was queued (it completes later). A
   * negative {@code timeout} never waits.
   */
  private Acquisition acquire(String key, String flow, int weight, Priority priority,
      long timeoutNanos,
      CompletableFuture<Acquisition> waiter) {
    if (closed.get()) {
      return new Acquisition(null, Refusal.CLOSED, 0, 0, 0, 0);
    }
    for (;;) {
      KeyState s = state(key);
      if (s == null) {
        s = newKey(key);
        if (s == null) {
          return new Acquisition(null, Refusal.KEYS_FULL, 0, 0, 0, 0);
        }
      }
      Acquisition a;
      List<Runnable> after;
      synchronized (s.lock) {
        if (s.dead) {
          table.remove(key, s);   // helps it leave, and looks again
          continue;
        }
        long now = clock.nanoTime();
        s.lastUsed = now;
        s.expireAll(now);
        a = s.acquire(flow, weight, priority, now, timeoutNanos, waiter);
        after = s.takeLater();
      }
      KeyState.run(after);
      return a;
    }
  }

  private static Object[] newLocks(int n) {
    Object[] locks = new Object[n];
    for (int i = 0; i < n; i++) {
      locks[i] = new Object();
    }
    return locks;
  }

  /** The key's state, or null. */
  private KeyState state(String key) {
    return (KeyState) table.get(key);
  }

  /** A new key's state, mapped within the bound; null if the bound is reached and none is idle. */
  private KeyState newKey(String key) {
    synchronized (newKeyLocks[(key.hashCode() & 0x7fffffff) % newKeyLocks.length]) {
      KeyState made = state(key);
      return made != null ? made : makeKey(key);   // a dead one: the caller looks again
    }
  }

  /** Under the key's new-key lock, the key absent: its state, mapped. */
  private KeyState makeKey(String key) {
    // an adaptive key reads its limit from the adaptive limit its state makes: none made here
    int limit = adaptiveLimits != null ? 1 : limitOf(limitOfKey, key);
    if (!table.reserve()) {
      return null;
    }
    PermitGroup terms;
    try {
      terms = group == null ? null : group.termsOf(key);
    } catch (RuntimeException e) {
      table.unreserve();
      throw e;
    }
    for (;;) {
      GroupState g = terms == null ? null : groups.computeIfAbsent(terms.name(), GroupState::new);
      KeyState fresh = new KeyState(key, limit, settings, g, terms);
      if (g == null) {
        table.put(key, fresh);   // absent: new keys are made under this lock
        table.inserted();
        return fresh;
      }
      synchronized (g) {
        if (g.dead) {
          continue;   // its last key just left: a new group is made
        }
        table.put(key, fresh);
        g.members.add(fresh);
      }
      table.inserted();
      return fresh;
    }
  }

  /** The key's limit from the builder's function, checked; a bad one names the key. */
  static int limitOf(ToIntFunction<String> limitOfKey, String key) {
    try {
      return ConcurrencyLimiter.Builder.checkLimit(limitOfKey.applyAsInt(key),
          "the limit of key '" + key + "'");
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("no limit for key '" + key + "': " + e.getMessage(), e);
    }
  }

  /** Every half lease: takes back expired permits and forgets keys idle for a lease time. */
  private void scheduleSweep() {
    if (closed.get()) {
      return;
    }
    try {
      scheduler.schedule(() -> {
        try {
          table.sweepAll();
        } finally {
          scheduleSweep();
        }
      }, Math.max(1, leaseNanos / 2));
    } catch (RuntimeException e) {
      // a scheduler that refuses work: expiry then happens at the key's next acquisition
    }
  }

  @Override
  public int inFlight(String key) {
    KeyState s = state(key);
    if (s == null) {
      return 0;
    }
    synchronized (s.lock) {
      return s.held();
    }
  }

  @Override
  public int waiting(String key) {
    KeyState s = state(key);
    if (s == null) {
      return 0;
    }
    synchronized (s.lock) {
      return s.queue.size();
    }
  }

  @Override
  public long keys() {
    return table.size();   // never above the bound (the map's own count may be, for an instant)
  }

  @Override
  public AdaptiveLimit adaptiveLimit(String key) {
    KeyState s = state(key);
    return s == null ? null : s.adaptive;
  }

  @Override
  public int limit(String key) {
    KeyState s = state(key);
    if (s != null && s.adaptive != null) {
      return Math.max(1, s.adaptive.limit());   // the adaptive limit's now, not the last read
    }
    return s != null ? s.limit : limitOf(limitOfKey, key);
  }

  @Override
  public ConcurrencyStats stats() {
    return counters.stats(table.size(), 0, 0, false, clock.nanoTime());
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<Runnable> after = new ArrayList<>();
    for (KeyTable.Cell c : table.cells()) {
      KeyState s = (KeyState) c;
      synchronized (s.lock) {
        for (Waiter w : s.queue.clear()) {
          Acquisition a = new Acquisition(null, Refusal.CLOSED, s.limit, s.held(), 0,
              clock.nanoTime() - w.since);
          after.add(() -> w.future.complete(a));
        }
      }
    }
    after.forEach(Runnable::run);
  }

  private void tell(PermitEnd end) {
    tell(listener, end);
  }

  /** Tells {@code listener} of a permit that ended; a listener that throws changes nothing. */
  static void tell(Consumer<PermitEnd> listener, PermitEnd end) {
    try {
      listener.accept(end);
    } catch (RuntimeException e) {
      // a listener's failure is its own
    }
  }

  /** An acquisition waiting for weight to be released. */
  private static final class Waiter extends WaitQueues.Entry {
    Waiter(int weight, int priority, long since, CompletableFuture<Acquisition> future,
        String flow) {
      super(weight, priority, since, future, flow);
    }
  }

  /**
   * The monitor a key's state is guarded by, and what is to run once it is released: the key's
   * own, or its group's (a {@link GroupState}) for every key of the group.
   */
  static class Lock {
    /** What to run once the monitor is released (completions, listeners); null when nothing. */
    List<Runnable> pending;
  }

  /** A group of keys sharing a limit: its weight in flight and its keys, under its monitor. */
  static final class GroupState extends Lock {
    final String name;
    int inFlight;
    boolean dead;
    /** No lease of a key of the group ends before this (a lower bound). */
    long nextExpiry = Long.MAX_VALUE;
    final LinkedHashSet<KeyState> members = new LinkedHashSet<>();
    /** The keys with waiters. */
    final LinkedHashSet<KeyState> waiting = new LinkedHashSet<>();

    GroupState(String name) {
      this.name = name;
    }
  }

  /** One key: everything under its monitor ({@link #lock}). */
  final class KeyState extends KeyTable.Cell implements Permit.Owner {
    final String key;
    /** The key's limit: fixed, or its adaptive limit's as last read (under the monitor). */
    int limit;
    /** The key's adaptive limit; null for a fixed one. */
    final AdaptiveLimit adaptive;
    /** The key's monitor: its own, or its group's. */
    final Lock lock;
    /** The key's group, null if none; and the key's terms in it. */
    final GroupState group;
    final PermitGroup terms;
    /** The most weight in flight each priority may bring it to, by ordinal. */
    int[] ceilings;
    int inFlight;
    /** The permits in flight (for their leases), each at its {@link Permit#slot}. */
    private Permit[] held = new Permit[2];
    private int heldCount;
    /**
     * Handle permits (weight 1, no object): per slot, a generation that is odd while the slot is
     * in use (a handle is the generation and the slot), the lease's end, when it was acquired and
     * the weight in flight then; free slots are a stack.
     */
    private int[] handleGen = new int[0];
    private long[] handleExpiry = new long[0];
    private long[] handleAcquired = new long[0];
    private int[] handleInFlight = new int[0];
    private int[] freeHandles = new int[0];
    private int freeTop;
    private int handleSlots;
    private int handlesHeld;
    /** The waiters, a queue per priority. */
    final WaitQueues<Waiter> queue = settings.waitQueue(counters);
    long lastUsed;
    boolean dead;
    /** How long the key's permits are held: deadline-aware waits read it. */
    final HoldTime holdTime = new HoldTime();
    /** No lease ends before this (a lower bound; MAX_VALUE when nothing is in flight). */
    long nextExpiry = Long.MAX_VALUE;
    /**
     * The lock-free lane of the key's handle permits ({@link Lane}), made at the first one; only
     * for a key whose permits end telling nobody (no group, no adaptive limit, no listener).
     */
    volatile Lane lane;
    private final boolean laneable;

    KeyState(String key, int limit, ConcurrencyLimiter.Builder settings, GroupState group,
        PermitGroup terms) {
      this.key = key;
      this.limit = limit;
      this.group = group;
      this.terms = terms;
      this.lock = group != null ? group : new Lock();
      this.adaptive = adaptiveLimits == null ? null : adaptiveLimits.get();
      if (adaptive != null) {
        this.limit = Math.max(1, adaptive.limit());
      }
      this.ceilings = ceilings(this.limit);
      this.laneable = group == null && adaptive == null
          && listener == ConcurrencyLimiter.Builder.NO_LISTENER;
    }

    /** Under the monitor: the weight in flight, less the lane's slots held in reserve. */
    int held() {
      Lane l = lane;
      return l == null ? inFlight : inFlight - l.free();
    }

    /**
     * Under the monitor: the lane's reserve comes back to the key (its FREE slots close); true if
     * any did.
     */
    private boolean reclaimLane() {
      Lane l = lane;
      if (l == null) {
        return false;
      }
      int n = l.reclaim();
      add(-n);
      return n > 0;
    }

    /** A lane slot came back while waiters wait: they are served from it (takes the monitor). */
    void serveFromLane() {
      List<Runnable> after;
      synchronized (lock) {
        long now = clock.nanoTime();
        serve(now);
        Lane l = lane;
        if (l != null && queue.size() == 0) {
          l.contended = false;   // the last waiter served: the lane runs on its own again
        }
        after = takeLater();
      }
      run(after);
    }

    /** Idle: nothing in flight and nobody waiting (ended leases taken back first) for a lease. */
    @Override
    protected boolean killIfIdle(long now) {
      return die(now, leaseNanos);
    }

    /** Dies for room if nothing is in flight and nobody waits; a key holding permits refuses. */
    @Override
    protected boolean kill() {
      return die(clock.nanoTime(), 0);
    }

    /** Nothing in flight: the time left until it has been idle a lease; holding: the most. */
    @Override
    protected long pressure(long now) {
      synchronized (lock) {
        if (dead) {
          return 0;
        }
        return held() > 0 || queue.size() > 0
            ? Long.MAX_VALUE : Math.max(0, leaseNanos - (now - lastUsed));
      }
    }

    /**
     * Takes back ended leases, then marks the key dead (leaving its group) if nothing is in
     * flight, nobody waits and it was last used at least {@code idleNanos} ago.
     */
    private boolean die(long now, long idleNanos) {
      List<Runnable> after;
      boolean gone;
      synchronized (lock) {
        expire(now);
        if (!dead && queue.size() == 0 && now - lastUsed >= idleNanos && held() == 0) {
          reclaimLane();   // the lane's reserve: a handle taken meanwhile keeps the key alive
          if (inFlight == 0) {
            dead = true;
            leaveGroup();
          }
        }
        gone = dead;
        after = takeLater();
      }
      run(after);
      return gone;
    }

    private int[] ceilings(int limit) {
      int[] c = new int[PRIORITIES];
      for (Priority p : Priority.values()) {
        c[p.ordinal()] = settings.ceiling(limit, p);
      }
      return c;
    }

    /** Under the monitor: reads the adaptive limit; true if it grew (waiters may fit now). */
    boolean refreshLimit() {
      if (adaptive == null) {
        return false;
      }
      int now = Math.max(1, adaptive.limit());
      if (now == limit) {
        return false;
      }
      boolean grew = now > limit;
      limit = now;
      ceilings = ceilings(now);
      return grew;
    }

    /** Under the monitor: runs {@code r} once the monitor is released. */
    private void later(Runnable r) {
      if (lock.pending == null) {
        lock.pending = new ArrayList<>(2);
      }
      lock.pending.add(r);
    }

    /** Under the monitor: what is to run once it is released, handed over (null if nothing). */
    List<Runnable> takeLater() {
      List<Runnable> todo = lock.pending;
      lock.pending = null;
      return todo;
    }

    /**
     * Under the monitor: whether a waiter the limit of now could serve waits at or above priority
     * {@code p}; with an adaptive limit, one whose weight is above its share of the limit as it
     * is now waits for the limit to grow, and holds up nobody meanwhile.
     */
    boolean queued(int p) {
      return adaptive == null ? queue.atOrAbove(p) : queue.atOrAbove(p, this::servable);
    }

    /** Under the monitor: whether the limit of now, empty, would hold {@code w}. */
    private boolean servable(Waiter w) {
      return w.weight <= ceilings[w.priority];
    }

    /** Under the monitor: whether {@code weight} more fits priority {@code p}'s share and group. */
    boolean fits(int weight, int p) {
      return inFlight + weight <= ceilings[p]
          && (group == null || terms.fits(inFlight, group.inFlight, weight));
    }

    /** Under the monitor: why {@code weight} at priority {@code p} gets no permit now. */
    Refusal why(int weight, int p, boolean queued) {
      return !queued && inFlight + weight > ceilings[p] && inFlight + weight <= limit
          ? Refusal.SHED : Refusal.FULL;
    }

    /** Under the monitor: whether no wait could ever grant {@code weight} (its group's terms). */
    boolean neverFitsGroup(int weight) {
      return group != null && weight > Math.max(terms.assured(), terms.borrowCeiling());
    }

    /** Under the monitor: the key's (and its group's) weight in flight moves by {@code delta}. */
    private void add(int delta) {
      inFlight += delta;
      if (group != null) {
        group.inFlight += delta;
      }
    }

    /** Under the monitor: whether the key holds more than its assured share (a borrow). */
    boolean borrowed() {
      return group != null && inFlight > terms.assured();
    }

    /** Under the monitor: a lease of this key ends at {@code expires}. */
    private void leaseEnds(long expires) {
      nextExpiry = Math.min(nextExpiry, expires);
      if (group != null) {
        group.nextExpiry = Math.min(group.nextExpiry, expires);
      }
    }

    /** Under the monitor: the key leaves its group (removed as idle); the last key ends it. */
    void leaveGroup() {
      if (group != null) {
        group.members.remove(this);
        group.waiting.remove(this);
        if (group.members.isEmpty()) {
          group.dead = true;
          groups.remove(group.name, group);
        }
      }
    }

    /**
     * Under the monitor: takes back ended leases, of every key of the group for a grouped key
     * (their weight counts in the group), then serves waiters.
     */
    void expireAll(long now) {
      if (refreshLimit()) {
        serve(now);
      }
      if (group == null) {
        expire(now);
        return;
      }
      if (now < group.nextExpiry) {
        return;
      }
      long next = Long.MAX_VALUE;
      for (KeyState m : group.members) {
        m.expire(now);
        next = Math.min(next, m.nextExpiry);
      }
      group.nextExpiry = next;
    }

    /** Runs what {@link #takeLater} handed over. */
    static void run(List<Runnable> todo) {
      if (todo != null) {
        todo.forEach(Runnable::run);
      }
    }

    private void hold(Permit p) {
      if (heldCount == held.length) {
        held = Arrays.copyOf(held, held.length * 2);
      }
      p.slot = heldCount;
      held[heldCount++] = p;
    }

    /** Under the monitor: drops {@code p} from the permits in flight; false if it was not there. */
    private boolean unhold(Permit p) {
      int i = p.slot;
      if (i < 0 || i >= heldCount || held[i] != p) {
        return false;
      }
      Permit last = held[--heldCount];
      held[i] = last;
      last.slot = i;
      held[heldCount] = null;
      p.slot = -1;
      if (heldCount == 0 && held.length > 16) {
        held = new Permit[2];   // a burst is over: its array goes
      }
      return true;
    }

    /** Under the monitor: a handle permit now, or {@link #NO_PERMIT} (the refusal counted). */
    long acquireHandle(long now) {
      if (laneable) {
        return acquireLaneHandle(now);
      }
      int p = Priority.NORMAL.ordinal();
      if (queued(p) || !fits(1, p)) {
        counters.refused(neverFitsGroup(1) ? Refusal.TOO_HEAVY : why(1, p, queued(p)));
        return NO_PERMIT;
      }
      int slot;
      if (freeTop > 0) {
        slot = freeHandles[--freeTop];
      } else {
        if (handleSlots == handleGen.length) {
          int n = Math.max(4, handleSlots * 2);
          handleGen = Arrays.copyOf(handleGen, n);
          handleExpiry = Arrays.copyOf(handleExpiry, n);
          handleAcquired = Arrays.copyOf(handleAcquired, n);
          handleInFlight = Arrays.copyOf(handleInFlight, n);
          freeHandles = Arrays.copyOf(freeHandles, n);
        }
        slot = handleSlots++;
      }
      int gen = (handleGen[slot] + 1) & 0x3fff_ffff;   // odd: in use (bit 62 of a handle stays clear)
      handleGen[slot] = gen;
      long expires = Saturating.add(now, leaseNanos);
      handleExpiry[slot] = expires;
      handleAcquired[slot] = now;
      add(1);
      handlesHeld++;
      handleInFlight[slot] = inFlight;
      leaseEnds(expires);
      counters.granted(1);
      counters.acquired();
      return ((long) gen << 32) | slot;
    }

    /**
     * Under the monitor, for a key with a lane: a lane slot now, opening slots (as many as the
     * key's normal share has room for, up to the lane's size) when none is FREE; or {@link
     * #NO_PERMIT} (the refusal counted).
     */
    private long acquireLaneHandle(long now) {
      long h = takeLaneSlot(now);
      if (h >= 0) {
        counters.laneAcquired();
        return h;
      }
      int p = Priority.NORMAL.ordinal();
      counters.refused(why(1, p, queued(p)));
      return NO_PERMIT;
    }

    /**
     * Under the monitor, for a laneable key: a lane slot now, the lane made at the first, slots
     * opened (as many as the key's normal share has room for, up to the lane's size) when none
     * is FREE; or {@link #NO_PERMIT}, counting nothing (the caller counts, or answers on its
     * general path).
     */
    long takeLaneSlot(long now) {
      int p = Priority.NORMAL.ordinal();
      Lane l = lane;
      if (l == null) {
        l = new Lane(Lane.sizeFor(ceilings[p]));
        lane = l;
      }
      if (queue.size() == 0) {
        l.contended = false;   // the waiters have gone: the lane runs on its own again
      }
      if (queued(p)) {
        return NO_PERMIT;
      }
      for (int attempt = 0; attempt < 2; attempt++) {
        long h = l.tryAcquire(now);
        if (h >= 0) {
          return h;
        }
        int room = ceilings[p] - inFlight;
        int opened = room <= 0 ? 0 : l.open(room);
        if (opened == 0) {
          break;
        }
        add(opened);   // the slots opened are the key's weight, held in reserve for the lane
      }
      return NO_PERMIT;
    }

    /**
     * The lane slot {@code h}, taken at {@code now}, as a permit object: the key's permit like any
     * other (released, renewed, expired), ended through the lane. Its answer reads the key's
     * weight in flight when asked.
     */
    Acquisition lanePermit(long h, long now) {
      Permit permit = new Permit(this, key, h, 1, now, Saturating.add(now, leaseNanos), 0);
      return new Acquisition(permit, limit, this);
    }

    /**
     * The weight in flight, less the lane's reserve, read without the monitor: the count at about
     * this moment.
     */
    int laneInFlight() {
      Lane l = lane;
      return l == null ? inFlight : inFlight - l.free();
    }

    /** Under the monitor: whether {@code handle} names a slot in use now. */
    private boolean inUse(long handle) {
      int slot = (int) handle;
      int gen = (int) (handle >>> 32);
      return handle >= 0 && slot < handleSlots && (gen & 1) == 1 && handleGen[slot] == gen;
    }

    /** Under the monitor: frees a handle's slot (the generation moves on: stale handles fail). */
    private void freeHandle(int slot) {
      handleGen[slot] = (handleGen[slot] + 1) & 0x3fff_ffff;   // even: free
      freeHandles[freeTop++] = slot;
      add(-1);
      handlesHeld--;
    }

    /** Ends a handle permit still in flight; false if the handle names none. */
    boolean releaseHandle(long handle, Outcome outcome) {
      List<Runnable> after;
      long now;
      long acquiredAt;
      int inFlightAtStart;
      synchronized (lock) {
        if (!inUse(handle)) {
          return false;
        }
        int slot = (int) handle;
        acquiredAt = handleAcquired[slot];
        inFlightAtStart = handleInFlight[slot];
        freeHandle(slot);
        // the clock only when someone needs the time: a waiter served, or a listener told
        boolean timed = queue.size() > 0 || (group != null && !group.waiting.isEmpty())
            || listener != ConcurrencyLimiter.Builder.NO_LISTENER;
        now = timed ? clock.nanoTime() : acquiredAt;
        if (queue.size() > 0 || group != null) {
          serve(now);
        }
        after = takeLater();
      }
      run(after);
      ended(1, Math.max(0, now - acquiredAt), outcome, inFlightAtStart, 0);
      return true;
    }

    /** Under the monitor: a permit now, a refusal, or null when the waiter was queued. */
    // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
    @SuppressWarnings("FutureReturnValueIgnored")
    Acquisition acquire(String flow, int weight, Priority priority, long now, long timeoutNanos,
        CompletableFuture<Acquisition> future) {
      int p = priority.ordinal();
      int most = adaptive == null ? limit : Math.max(1, adaptive.maxLimit());
      if (weight > most || neverFitsGroup(weight)) {
        return refusal(Refusal.TOO_HEAVY, 0);   // no limit it can have holds this weight
      }
      if (weight > (adaptive == null ? ceilings[p] : settings.ceiling(most, priority))) {
        return refusal(Refusal.SHED, 0);   // its share never holds this weight: no wait serves it
      }
      if (lane != null && !fits(weight, p)) {
        reclaimLane();   // the lane's reserve is the key's capacity too
      }
      boolean queued = queued(p);
      if (!queued && fits(weight, p)) {
        Permit granted = grant(weight, now);
        queue.granted(flow, p, weight, now);   // fair queuing counts the flow's demand
        return new Acquisition(granted, null, limit, held(), queue.size(), 0, false,
            borrowed());
      }
      if (timeoutNanos <= 0 || future == null) {   // no wait: the reason now
        return refusal(why(weight, p, queued), 0);
      }
      if (queue.shedding()) {
        return refusal(Refusal.OVERLOADED, 0);   // CoDel: a standing queue takes nobody more
      }
      if (deadlineAware
          && holdTime.hopeless(queue.sizeAtOrAbove(p) + weight, limit, timeoutNanos)) {
        return refusal(Refusal.DEADLINE, 0);   // it would time out waiting: refused now
      }
      Waiter w = new Waiter(weight, p, now, future, flow);
      if (!queue.hasRoomFor(w)) {
        return refusal(Refusal.QUEUE_FULL, 0);   // fair queuing: its flow's shortest queue is full
      }
      if (queue.size() >= maxWaiters) {
        Waiter refused = queue.evictFor(p);
        if (refused == null) {
          return refusal(Refusal.QUEUE_FULL, 0);
        }
        Acquisition a = refusal(Refusal.QUEUE_FULL, now - refused.since);
        later(() -> refused.future.complete(a));
      }
      queue.add(w);
      if (group != null) {
        group.waiting.add(this);
      }
      Lane l = lane;
      if (l != null) {
        // releases of lane slots now come to the monitor; then the slots freed meanwhile come back
        l.contended = true;
        if (reclaimLane()) {
          serve(now);
        }
      }
      if (timeoutNanos != Long.MAX_VALUE) {
        try {
          scheduler.schedule(() -> timedOut(w), timeoutNanos);
        } catch (RuntimeException e) {
          queue.remove(w);
          return refusal(Refusal.TIMED_OUT, 0);
        }
      }
      // a future cancelled by its caller leaves the queue
      future.whenComplete((a, failure) -> {
        if (future.isCancelled()) {
          leave(w);
        }
      });
      return null;
    }

    private Acquisition refusal(Refusal why, long waited) {
      return new Acquisition(null, why, limit, held(), queue.size(), waited);
    }

    private Permit grant(int weight, long now) {
      add(weight);
      counters.granted(weight);
      Permit p = new Permit(this, key, ids.incrementAndGet(), weight, now,
          Saturating.add(now, leaseNanos), inFlight);
      hold(p);
      leaseEnds(p.expiresAt);
      return p;
    }

    private void timedOut(Waiter w) {
      Acquisition a;
      synchronized (lock) {
        if (!queue.remove(w)) {
          return;   // served, cancelled or refused already
        }
        long now = clock.nanoTime();
        queue.shedOnDequeue(now - w.since, now);   // CoDel measures the waits that ran out too
        a = refusal(Refusal.TIMED_OUT, now - w.since);
      }
      w.future.complete(a);
    }

    private void leave(Waiter w) {
      List<Runnable> after;
      synchronized (lock) {
        if (queue.remove(w)) {
          serve(clock.nanoTime());   // a waiter behind it may fit now
        }
        after = takeLater();
      }
      run(after);
    }

    /**
     * Under the monitor: permits whose lease ran out come back now (a release racing the expiry
     * wins, and gives the weight back itself), and waiters that now fit are served.
     */
    void expire(long now) {
      Lane l = lane;
      if (l != null) {
        int n = l.expire(now, leaseNanos);
        for (int i = 0; i < n; i++) {
          counters.laneEnded(Outcome.EXPIRED);
        }
        if (n > 0 && queue.size() > 0) {
          serve(now);
        }
      }
      if ((heldCount == 0 && handlesHeld == 0) || now < nextExpiry) {
        return;   // the common case: no lease can have ended, nothing is scanned
      }
      boolean freed = false;
      long next = Long.MAX_VALUE;
      for (int slot = 0; slot < handleSlots && handlesHeld > 0; slot++) {
        if ((handleGen[slot] & 1) == 0) {
          continue;
        }
        if (now >= handleExpiry[slot]) {
          long heldNanos = Math.max(0, handleExpiry[slot] - handleAcquired[slot]);
          int atStart = handleInFlight[slot];
          freeHandle(slot);
          freed = true;
          later(() -> ended(1, heldNanos, Outcome.EXPIRED, atStart, 0));
        } else {
          next = Math.min(next, handleExpiry[slot]);
        }
      }
      for (int i = heldCount - 1; i >= 0; i--) {   // from the end: unhold moves the last here
        Permit p = held[i];
        if (now >= p.expiresAt && p.markEnded()) {
          unhold(p);
          add(-p.weight());
          freed = true;
          long heldNanos = Math.max(0, p.expiresAt - p.acquiredAtNanos());
          later(() -> ended(p, heldNanos, Outcome.EXPIRED));
        } else {
          next = Math.min(next, p.expiresAt);
        }
      }
      nextExpiry = next;
      if (freed) {
        serve(now);
      }
    }

    /** A permit was released: its weight comes back, waiters are served. */
    @Override
    public boolean ended(Permit p, Outcome outcome) {
      if (Lane.isLane(p.id())) {
        Lane l = lane;
        if (l == null || !l.release(p.id())) {
          return false;   // its lease ran out: the lane let it go
        }
        counters.laneEnded(outcome);
        if (l.contended) {
          serveFromLane();   // waiters: the slot just freed is theirs
        }
        return true;
      }
      List<Runnable> after;
      long now;
      synchronized (lock) {
        if (!unhold(p)) {
          return true;   // never: the expiry marks a permit ended before it lets it go
        }
        add(-p.weight());
        now = clock.nanoTime();
        lastUsed = now;
        holdTime.learn(now - p.acquiredAtNanos(), outcome);
        serve(now);
        after = takeLater();
      }
      run(after);
      ended(p, Math.max(0, now - p.acquiredAtNanos()), outcome);
      return true;
    }

    private void ended(Permit p, long heldNanos, Outcome outcome) {
      ended(p.weight(), heldNanos, outcome, p.inFlightAtStart(), p.waitedNanos);
    }

    /** Counts a permit that ended and tells the listener (allocating nothing when none is set). */
    private void ended(int weight, long heldNanos, Outcome outcome, int inFlightAtStart,
        long waitedNanos) {
      counters.ended(outcome, weight);
      if (adaptive != null) {
        long now = clock.nanoTime();
        PermitEnd end = new PermitEnd(key, weight, heldNanos, outcome, inFlightAtStart,
            waitedNanos, clock.pausedNanos(now - 2 * heldNanos, now));
        adaptive.onEnd(end, now);
        if (listener != ConcurrencyLimiter.Builder.NO_LISTENER) {
          tell(end);
        }
        return;
      }
      if (listener != ConcurrencyLimiter.Builder.NO_LISTENER) {
        long now = clock.nanoTime();
        tell(new PermitEnd(key, weight, heldNanos, outcome, inFlightAtStart, waitedNanos,
            clock.pausedNanos(now - 2 * heldNanos, now)));
      }
    }

    /**
     * Under the monitor: grants waiters, highest priority first and in queue order within one,
     * while the next one fits its priority's share; nobody passes a waiter that does not fit.
     */
    private void serve(long now) {
      refreshLimit();
      if (group == null) {
        serveOwn(now);
        return;
      }
      if (group.waiting.isEmpty()) {
        return;
      }
      // every key of the group with waiters, in turn (a copy: serving may empty a queue)
      for (KeyState k : new ArrayList<>(group.waiting)) {
        k.serveOwn(now);
        if (k.queue.size() == 0) {
          group.waiting.remove(k);
        }
      }
    }

    private void serveOwn(long now) {
      if (lane != null && queue.size() > 0) {
        reclaimLane();
      }
      for (int i = 0; i < PRIORITIES; i++) {
        for (Waiter w = next(i); w != null; w = next(i)) {
          if (!fits(w.weight, i)) {
            return;   // the next in line waits; nobody passes it
          }
          boolean shed = queue.shedOnDequeue(now - w.since, now);
          queue.remove(w);
          if (shed) {   // CoDel: a waiter past the target while the queue sheds
            Acquisition a = refusal(Refusal.OVERLOADED, now - w.since);
            Waiter refused = w;
            later(() -> refused.future.complete(a));
          } else {
            grantWaiter(w, now);
          }
        }
      }
    }

    /** The next waiter of priority {@code i} in line (see {@link #queued}). */
    private Waiter next(int i) {
      return adaptive == null ? queue.next(i) : queue.next(i, this::servable);
    }

    private void grantWaiter(Waiter w, long now) {
      Permit p = grant(w.weight, now);
      counters.dispatched(w.priority);
      Acquisition a = new Acquisition(p, null, limit, held(), queue.size(), now - w.since,
          false, borrowed());
      later(() -> {
        if (!w.future.complete(a)) {
          p.end(Outcome.IGNORED);   // its caller left just now
        }
      });
    }

    /** Extends the lease of a permit still in flight (takes the monitor). */
    @Override
    public boolean holds(Permit p) {
      if (!Lane.isLane(p.id())) {
        return true;
      }
      Lane l = lane;
      return l != null && l.isHeld(p.id());
    }

    @Override
    public boolean renew(Permit p) {
      List<Runnable> after;
      boolean renewed = false;
      synchronized (lock) {
        long now = clock.nanoTime();
        expire(now);   // a lease that ended, not yet taken back, is not renewed
        if (Lane.isLane(p.id())) {
          Lane l = lane;
          if (p.isActive() && l != null && l.renew(p.id(), now)) {
            p.expiresAt = Saturating.add(now, leaseNanos);
            renewed = true;
          }
        } else if (p.isActive() && p.slot >= 0 && p.slot < heldCount && held[p.slot] == p) {
          p.expiresAt = Saturating.add(now, leaseNanos);
          renewed = true;
        }
        after = takeLater();
      }
      run(after);
      return renewed;
    }
  }

  private static final int PRIORITIES = Priority.values().length;

}

package dev.sluice.concurrency;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Clock;
import dev.sluice.Scheduler;
import dev.sluice.StoreFailure;
import dev.sluice.spi.PermitStore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/**
 * At most a limit of permits in flight per key. Thread-safe. Every method validates its arguments
 * first and names a bad one in an {@link IllegalArgumentException}.
 *
 * <p>Each key has a limit (the same for every key, or a function of the key, read when the key
 * is first seen) and a bounded wait queue. {@link #tryAcquire} answers at once;
 * {@link #acquire} waits up to a timeout on the calling thread; {@link #acquireAsync} waits
 * holding no thread. A permit comes back when released ({@link Permit#release}), or when its
 * lease runs out: a holder that dies or forgets costs at most one lease time.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public interface ConcurrencyLimiter extends AutoCloseable {
  /** A permit of weight 1 if one is free now; never waits. */
  default Acquisition tryAcquire(String key) {
    return tryAcquire(key, 1);
  }

  /**
   * A permit of {@code weight} at {@link Priority#NORMAL} if that much is free now (and nobody
   * waits before it).
   */
  default Acquisition tryAcquire(String key, int weight) {
    return tryAcquire(key, weight, Priority.NORMAL);
  }

  /**
   * A permit of {@code weight} if that much is free now within {@code priority}'s share of the
   * key's permits (a refusal for want of share is {@link Refusal#SHED}), and no waiter of the
   * same or a higher priority is before it; never waits.
   */
  Acquisition tryAcquire(String key, int weight, Priority priority);

  /**
   * A permit of weight 1, waiting up to {@code timeout} on this thread for one to be released.
   */
  default Acquisition acquire(String key, Duration timeout) {
    return acquire(key, 1, timeout);
  }

  /**
   * A permit of {@code weight}, waiting up to {@code timeout} on this thread. An interrupt ends
   * the wait ({@link Refusal#INTERRUPTED}) and stays set.
   */
  default Acquisition acquire(String key, int weight, Duration timeout) {
    return acquire(key, weight, Priority.NORMAL, timeout);
  }

  /**
   * A permit of {@code weight} within {@code priority}'s share, waiting up to {@code timeout} on
   * this thread; waiters are served highest priority first. A wait that runs out is refused
   * {@link Refusal#TIMED_OUT}; a timeout of zero does not wait and is refused for the reason
   * {@link #tryAcquire} gives. An interrupt ends the wait ({@link Refusal#INTERRUPTED}) and stays
   * set.
   */
  Acquisition acquire(String key, int weight, Priority priority, Duration timeout);

  /**
   * As {@link #acquire}, holding no thread while it waits: the future completes with the
   * acquisition (a refusal is a completed future too). Cancelling the future leaves the queue;
   * a permit granted to a cancelled future is released at once.
   */
  default CompletableFuture<Acquisition> acquireAsync(String key, int weight, Duration timeout) {
    return acquireAsync(key, weight, Priority.NORMAL, timeout);
  }

  /** As {@link #acquire(String, int, Priority, Duration)}, holding no thread while it waits. */
  /**
   * {@link #acquire(String, int, Priority, Duration)} for a request of {@code flow} (a tenant, a
   * user, a client): with {@link Builder#fairQueuing}, its wait is fair among the key's flows; a
   * limiter without it ignores the flow.
   */
  default Acquisition acquire(String key, String flow, int weight, Priority priority,
      Duration timeout) {
    return acquire(key, weight, priority, timeout);
  }

  /** {@link #acquireAsync(String, int, Priority, Duration)} for a request of {@code flow}. */
  default CompletableFuture<Acquisition> acquireAsync(String key, String flow, int weight,
      Priority priority, Duration timeout) {
    return acquireAsync(key, weight, priority, timeout);
  }

  CompletableFuture<Acquisition> acquireAsync(String key, int weight, Priority priority,
      Duration timeout);

  /**
   * The permit {@code sharedId} names on this limiter's store ({@link Permit#sharedId()}), granted
   * by this instance or by another one on the same store, to renew or release from here: behind a
   * load balancer a release may reach any instance. Its renew and release are the store's, and
   * answer false when the store holds no such permit (released, its lease ended, or never
   * granted); a wrong key or weight names no permit. Its end counts in this limiter's
   * {@link ConcurrencyStats#ended}, but is told to no {@code onPermitEnd} listener and teaches no
   * adaptive limit: how long it was held is known only where it was acquired. It does not count in
   * this limiter's {@link ConcurrencyStats#inFlight()}, which is the weight granted here.
   *
   * @throws UnsupportedOperationException for a limiter in memory, whose permits are its JVM's
   * @throws IllegalArgumentException naming a key, id or weight that can name no permit
   */
  default Permit sharedPermit(String key, String sharedId, int weight) {
    throw new UnsupportedOperationException("a concurrency limiter in memory keeps its permits in"
        + " its own JVM: only a limiter on a shared store (Builder.store) finds a permit by its"
        + " shared id");
  }

  /**
   * The adaptive limit of {@code key} in this JVM (to read its estimates: a meter of
   * {@link AdaptiveLimit#noLoadLatencyNanos()} and {@link AdaptiveLimit#gradient()}); null for a
   * fixed limit, or a key this JVM holds no state for.
   */
  default AdaptiveLimit adaptiveLimit(String key) {
    return null;
  }

  /** What {@link #tryAcquireHandle} answers when it acquires nothing. */
  long NO_PERMIT = -1;

  /**
   * A permit of weight 1 at {@link Priority#NORMAL}, named by a number instead of an object, for
   * hot paths that allocate nothing (in memory, no object is made): a handle of zero or more
   * when acquired, or {@link #NO_PERMIT} when not (for the reason, call {@link #tryAcquire}). The
   * permit has a lease as any other and must be given back with
   * {@link #release(String, long, Outcome)} under the same key.
   */
  default long tryAcquireHandle(String key) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " has no handle permits; use tryAcquire");
  }

  /**
   * Ends the permit {@code handle} names, acquired under {@code key} by
   * {@link #tryAcquireHandle}. Exactly once: true for the call that ended it; false for a handle
   * already released, whose lease ended, or that was never this key's (nothing changes then).
   */
  default boolean release(String key, long handle, Outcome outcome) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " has no handle permits; use tryAcquire");
  }

  /**
   * How long a caller whose whole call must end within {@code deadline} should wait for a permit
   * of {@code key}: the deadline less the key's mean permit hold time (what the work after the
   * wait is expected to take), since a permit granted at the deadline serves nobody; the deadline
   * itself while no permit of the key has ended yet. Zero or less: the caller should not wait
   * (a free permit may still be taken at once). The HTTP filters bound a request's wait with it
   * when the request carries a deadline ({@code grpc-timeout}).
   */
  default Duration usefulWait(String key, Duration deadline) {
    return deadline;
  }

  /** The key's weight in flight now. */
  int inFlight(String key);

  /** Acquisitions waiting on the key now. */
  int waiting(String key);

  /** Keys held now (idle ones until swept). */
  long keys();

  /**
   * The key's limit: the most weight in flight at once.
   *
   * @throws IllegalArgumentException if the limit function refuses the key
   */
  int limit(String key);

  /** What the limiter has done since it was built: acquisitions, refusals by reason, ends. */
  ConcurrencyStats stats();

  /** Stops serving: waiters are refused ({@link Refusal#CLOSED}), as is every later acquire. */
  @Override
  void close();

  /** A builder; {@link Builder#limit} is required. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * How many acquisitions may wait on one key unless {@link Builder#maxWaiters} says otherwise:
   * the one default of the library, the Spring starter and the service.
   */
  int DEFAULT_MAX_WAITERS = 100;

  /** How long a permit lasts without a release or a renewal unless {@link Builder#lease} says otherwise. */
  Duration DEFAULT_LEASE = Duration.ofSeconds(30);

  /** Keys held at once unless {@link Builder#maximumKeys} says otherwise. */
  long DEFAULT_MAXIMUM_KEYS = 100_000;

  /** Settings of an in-memory {@link ConcurrencyLimiter}. */
  final class Builder {
    ToIntFunction<String> limit;
    Duration lease = DEFAULT_LEASE;
    int maxWaiters = DEFAULT_MAX_WAITERS;
    QueueOrder order = QueueOrder.FIFO;
    long maximumKeys = DEFAULT_MAXIMUM_KEYS;
    Clock clock = Clock.system();
    Scheduler scheduler = Scheduler.system();
    /** The listener when none is set: nothing to tell, so nothing is allocated to tell it. */
    static final Consumer<PermitEnd> NO_LISTENER = end -> { };

    Consumer<PermitEnd> onPermitEnd = NO_LISTENER;
    /** Each priority's share of a key's permits, by ordinal. */
    final double[] shares = {1, 1, 1};
    PermitStore store;
    ConcurrencyGroup group;
    Supplier<AdaptiveLimit> adaptive;
    StoreFailure onStoreFailure = StoreFailure.FAIL_CLOSED;
    CircuitBreakerSettings breaker = CircuitBreakerSettings.defaults();
    Duration pollInterval = Duration.ofMillis(10);
    boolean deadlineAware = true;
    /** CoDel's target and interval; null when off. */
    Duration codelTarget;
    Duration codelInterval;
    /** Fair queuing among flows; null when off. */
    FairQueuing fair;

    Builder() {}

    /** A key's wait queue, with CoDel when it is set. */
    <W extends WaitQueues.Entry> WaitQueues<W> waitQueue(Counters counters) {
      return new WaitQueues<>(order, counters, codelTarget == null ? 0 : codelTarget.toNanos(),
          codelTarget == null ? 0 : codelInterval.toNanos(), fair);
    }

    /** The most weight in flight per key (at least 1). */
    public Builder limit(int permits) {
      checkLimit(permits, "limit");
      this.limit = key -> permits;
      return this;
    }

    /**
     * The most weight in flight for each key, read when the key is first seen (at least 1; a
     * function that answers less, or throws, refuses that key's acquisitions with the error).
     */
    public Builder limit(ToIntFunction<String> limitOfKey) {
      this.limit = Objects.requireNonNull(limitOfKey, "limitOfKey");
      return this;
    }

    /**
     * How long a permit stays in flight without a release or a renewal (default 30 s, at least
     * 1 ms): a holder that dies costs at most this.
     */
    public Builder lease(Duration lease) {
      this.lease = checkLease(lease);
      return this;
    }

    /** A lease from 1 ms to 1 day, or an exception naming it. */
    static Duration checkLease(Duration lease) {
      Objects.requireNonNull(lease, "lease");
      if (lease.toMillis() < 1 || lease.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException("lease must be between 1 ms and 1 day but was " + lease);
      }
      return lease;
    }

    /** Acquisitions that may wait on one key (default 100; 0: none waits). */
    public Builder maxWaiters(int waiters) {
      if (waiters < 0 || waiters > 1_000_000) {
        throw new IllegalArgumentException("maxWaiters must be between 0 and 1000000 but was "
            + waiters);
      }
      this.maxWaiters = waiters;
      return this;
    }

    /**
     * Which waiter a released permit goes to (default {@link QueueOrder#FIFO}). With
     * {@link QueueOrder#LIFO} a full queue also makes room for a new waiter by refusing its
     * oldest ({@link Refusal#QUEUE_FULL}), whose caller has likely given up already.
     */
    public Builder queueOrder(QueueOrder order) {
      this.order = Objects.requireNonNull(order, "order");
      return this;
    }

    /**
     * CoDel for each key's wait queue (Nichols and Jacobson's controlled delay, as Facebook
     * applies it to request queues; default off): when the waits of the waiters leaving a key's
     * queue stay at or above {@code target} for a whole {@code interval}, the queue sheds until
     * it drains or a wait is short again: acquisitions that would wait, and waiters already past
     * the target, are refused {@link Refusal#OVERLOADED}. A standing queue then costs callers an
     * interval, not their whole timeout. The usual setting is 5 ms and 100 ms.
     *
     * @throws IllegalArgumentException unless 0 &lt; target &lt;= interval &lt;= 1 minute
     */
    public Builder codel(Duration target, Duration interval) {
      Objects.requireNonNull(target, "target");
      Objects.requireNonNull(interval, "interval");
      if (target.isNegative() || target.isZero() || interval.compareTo(target) < 0
          || interval.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException("codel needs 0 < target <= interval <= 1 minute but"
            + " target was " + target + " and interval " + interval);
      }
      this.codelTarget = target;
      this.codelInterval = interval;
      return this;
    }

    /**
     * Fair queuing among flows for each key's waiters ({@link FairQueuing}; default off: waiters
     * are served in {@link #queueOrder} within a priority). The flow is what {@link
     * ConcurrencyLimiter#acquire(String, String, int, Priority, Duration)} names; the key's
     * {@link #maxWaiters} still bounds its waiters in all.
     */
    public Builder fairQueuing(FairQueuing fairQueuing) {
      this.fair = Objects.requireNonNull(fairQueuing, "fairQueuing");
      return this;
    }

    /** Keys held at once (default 100,000); a new key past it is refused while none is idle. */
    public Builder maximumKeys(long keys) {
      if (keys < 1 || keys > 1_000_000_000L) {
        throw new IllegalArgumentException("maximumKeys must be between 1 and 1000000000 but was "
            + keys);
      }
      this.maximumKeys = keys;
      return this;
    }

    /** The clock of leases and waits (default the system's). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Where lease sweeps and wait timeouts run (default a shared daemon thread). */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * Told of every permit that ends, with its outcome and how long it was held (after the
     * permit is back; a listener that throws changes nothing).
     */
    public Builder onPermitEnd(Consumer<PermitEnd> listener) {
      this.onPermitEnd = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * The share of each key's permits that acquisitions of {@code priority} may use, from 0 to 1
     * (default 1 for every priority): with {@code share(SHEDDABLE, 0.8)} and a limit of 10,
     * sheddable traffic holds at most 8 permits and leaves 2 to the others, refused
     * {@link Refusal#SHED} past its share. A priority's share is that many permits rounded down;
     * shares must not grow as the priority falls (checked at {@link #build}).
     */
    public Builder share(Priority priority, double fraction) {
      Objects.requireNonNull(priority, "priority");
      if (!(fraction >= 0 && fraction <= 1)) {
        throw new IllegalArgumentException("the share of " + priority + " must be between 0 and 1"
            + " but was " + fraction);
      }
      shares[priority.ordinal()] = fraction;
      return this;
    }

    /**
     * Makes each key's limit adaptive: {@code perKey} makes a key's {@link AdaptiveLimit} when
     * the key is first seen (for example {@code GradientLimit.builder().max(1000)::build}), which
     * learns from every permit of the key that ends and gives the limit each acquisition uses;
     * a fixed {@link #limit} is then not needed (and is ignored). A limit that comes down takes
     * no permit back: acquisitions are refused (or wait) until the weight in flight is under it.
     * On a {@link #store}, each instance learns from its own permits and sends its limit as the
     * ceiling of the shared count (see {@code docs/concurrency.md}).
     */
    public Builder adaptive(Supplier<AdaptiveLimit> perKey) {
      this.adaptive = Objects.requireNonNull(perKey, "perKey");
      return this;
    }

    /**
     * Whether an acquisition that would wait is refused at once ({@link Refusal#DEADLINE}) when
     * its expected wait is longer than its timeout (default true; in memory and on a store). The expected wait
     * is the key's mean permit hold time (learned from the permits that end as
     * {@link Outcome#SUCCESS} or {@link Outcome#DROPPED}) times the waiters before it plus its
     * weight, over the limit: a caller with 50 ms left is not queued behind a second of work
     * only to time out there. A key with no permit ended yet has no estimate and waits as asked.
     */
    public Builder deadlineAware(boolean refuseHopelessWaits) {
      this.deadlineAware = refuseHopelessWaits;
      return this;
    }

    /**
     * Makes the keys partitions of groups that share a limit, each with an assured share that
     * borrows idle permits from the others (see {@link ConcurrencyGroup}); each key's own
     * {@link #limit} is then its ceiling, and defaults to the group's limit. On a shared store
     * the store must keep groups ({@link PermitStore#supportsPermitGroups()}: Redis and
     * PostgreSQL do).
     */
    public Builder group(ConcurrencyGroup group) {
      this.group = Objects.requireNonNull(group, "group");
      return this;
    }

    /**
     * Keeps the permits in a shared store, so that the limit holds across every instance that
     * uses the same store and key (default: in this JVM only). Each acquisition, renewal and
     * release is one call to the store, on the store's clock; waiters wait in this JVM and ask
     * the store again when a permit of their key is released here, and every
     * {@link #pollInterval} otherwise.
     */
    public Builder store(PermitStore store) {
      this.store = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * What a limiter on a store answers while the store fails (default
     * {@link StoreFailure#FAIL_CLOSED}: {@link Refusal#STORE_UNAVAILABLE});
     * {@code FAIL_OPEN} grants permits that count nowhere, {@code FALLBACK_IN_MEMORY} decides
     * with an in-memory limiter of the same settings in this JVM. Every such answer is
     * {@link Acquisition#isDegraded() degraded}. {@code LOCAL_SHARE} is the rate limiters'
     * fleet mode and is refused here.
     */
    public Builder onStoreFailure(StoreFailure policy) {
      Objects.requireNonNull(policy, "policy");
      if (policy == StoreFailure.LOCAL_SHARE) {
        throw new IllegalArgumentException("onStoreFailure LOCAL_SHARE is for fleet-mode rate"
            + " limiters; a concurrency limiter takes FAIL_CLOSED, FAIL_OPEN or FALLBACK_IN_MEMORY");
      }
      this.onStoreFailure = policy;
      return this;
    }

    /** The circuit breaker in front of the store (default {@link CircuitBreakerSettings#defaults()}). */
    public Builder circuitBreaker(CircuitBreakerSettings settings) {
      this.breaker = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /**
     * How often a waiter on a store asks again when no permit of its key was released in this
     * JVM (default 10 ms; 1 ms to 10 s): a permit released by another instance is seen within it.
     */
    public Builder pollInterval(Duration interval) {
      Objects.requireNonNull(interval, "interval");
      if (interval.toMillis() < 1 || interval.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException("pollInterval must be between 1 ms and 10 s but was "
            + interval);
      }
      this.pollInterval = interval;
      return this;
    }

    /**
     * The limiter.
     *
     * @throws IllegalStateException if no limit (nor group) was set, the shares grow as priority
     *     falls, or a group is set on a store that keeps none
     */
    public ConcurrencyLimiter build() {
      if (adaptive != null && group != null) {
        throw new IllegalStateException("a group's keys share a fixed limit; adaptive limits and"
            + " groups do not combine yet");
      }
      if (limit == null && group == null && adaptive == null) {
        throw new IllegalStateException("a concurrency limiter needs a limit: limit(n) or"
            + " limit(key -> n), or a group(...)");
      }
      if (group != null && store != null && !store.supportsPermitGroups()) {
        throw new IllegalStateException("the store " + store + " keeps no permit groups, so"
            + " group(...) cannot be used with it");
      }
      Priority[] all = Priority.values();
      for (int i = 1; i < all.length; i++) {
        if (shares[i] > shares[i - 1]) {
          throw new IllegalStateException("the share of " + all[i] + " (" + shares[i]
              + ") is above the share of " + all[i - 1] + " (" + shares[i - 1]
              + "): a lower priority may not use more of the permits than a higher one");
        }
      }
      return store == null ? new InMemoryConcurrencyLimiter(this)
          : new StoreConcurrencyLimiter(this);
    }

    /** Each key's limit: the one set, or the group's. */
    ToIntFunction<String> limitOfKey() {
      if (adaptive != null) {
        Supplier<AdaptiveLimit> perKey = adaptive;
        return key -> Math.max(1, perKey.get().limit());
      }
      if (limit != null) {
        return limit;
      }
      int groupLimit = group.limit();
      return key -> groupLimit;
    }

    /** The permits {@code priority} may hold of a key whose limit is {@code limit}. */
    int ceiling(int limit, Priority priority) {
      double share = shares[priority.ordinal()];
      return share >= 1 ? limit : (int) Math.floor(limit * share + 1e-9);
    }

    static int checkLimit(int permits, String what) {
      if (permits < 1) {
        throw new IllegalArgumentException(what + " must be at least 1 but was " + permits);
      }
      return permits;
    }
  }
}

package dev.sluice.concurrency;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
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
 */
public interface ConcurrencyLimiter extends AutoCloseable {
  /** A permit of weight 1 if one is free now; never waits. */
  default Acquisition tryAcquire(String key) {
    return tryAcquire(key, 1);
  }

  /** A permit of {@code weight} if that much is free now (and nobody waits before it). */
  Acquisition tryAcquire(String key, int weight);

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
  Acquisition acquire(String key, int weight, Duration timeout);

  /**
   * As {@link #acquire}, holding no thread while it waits: the future completes with the
   * acquisition (a refusal is a completed future too). Cancelling the future leaves the queue;
   * a permit granted to a cancelled future is released at once.
   */
  CompletableFuture<Acquisition> acquireAsync(String key, int weight, Duration timeout);

  /** The key's weight in flight now. */
  int inFlight(String key);

  /** Acquisitions waiting on the key now. */
  int waiting(String key);

  /** Keys held now (idle ones until swept). */
  long keys();

  /** Stops serving: waiters are refused ({@link Refusal#CLOSED}), as is every later acquire. */
  @Override
  void close();

  /** A builder; {@link Builder#limit} is required. */
  static Builder builder() {
    return new Builder();
  }

  /** Settings of an in-memory {@link ConcurrencyLimiter}. */
  final class Builder {
    ToIntFunction<String> limit;
    Duration lease = Duration.ofSeconds(30);
    int maxWaiters = 100;
    QueueOrder order = QueueOrder.FIFO;
    long maximumKeys = 100_000;
    Clock clock = Clock.system();
    Scheduler scheduler = Scheduler.system();
    Consumer<PermitEnd> onPermitEnd = end -> { };

    Builder() {}

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
      Objects.requireNonNull(lease, "lease");
      if (lease.toMillis() < 1 || lease.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException("lease must be between 1 ms and 1 day but was " + lease);
      }
      this.lease = lease;
      return this;
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
     * The limiter.
     *
     * @throws IllegalStateException if no limit was set
     */
    public ConcurrencyLimiter build() {
      if (limit == null) {
        throw new IllegalStateException("a concurrency limiter needs a limit: limit(n) or"
            + " limit(key -> n)");
      }
      return new InMemoryConcurrencyLimiter(this);
    }

    static int checkLimit(int permits, String what) {
      if (permits < 1) {
        throw new IllegalArgumentException(what + " must be at least 1 but was " + permits);
      }
      return permits;
    }
  }
}

package dev.sluice;

import dev.sluice.concurrency.Bulkhead;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.health.HealthShedder;
import dev.sluice.internal.EngineAccess;
import dev.sluice.spi.DecisionStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The front door: one place to start each kind of limit.
 *
 * <ul>
 *   <li>{@link #builder()}: a {@link RateLimiter}, requests per time per key (leaky bucket, token
 *       bucket, GCRA, windows), in memory or on a shared store;
 *   <li>{@link #concurrency()}: a {@link ConcurrencyLimiter}, requests in flight per key, with
 *       waiting, priorities, groups and adaptive limits, in memory or on a shared store;
 *   <li>{@link #bulkhead(int)}: a {@link Bulkhead}, one lock-free limit on requests in flight;
 *   <li>{@link #health()}: a {@link HealthShedder}, admission by priority as the host's health
 *       (CPU, pools, GC) worsens.
 * </ul>
 *
 * <pre>{@code
 * RateLimiter limiter = Sluice.builder()
 *     .limit(Limit.leakyBucket(10, Rate.perSecond(1.5)))
 *     .build();
 * Decision d = limiter.tryAcquire("user:42");
 *
 * ConcurrencyLimiter inFlight = Sluice.concurrency().limit(8).build();
 * Acquisition a = inFlight.tryAcquire("backend");
 * }</pre>
 *
 * <p>Each is also its own type's {@code builder()}; the two spellings build the same thing.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#operations">docs/semantics.md, "Operations"</a>.
 */
public final class Sluice {
  static {
    // the SPI's StoreReference reaches the package-private engine through this (EngineAccess)
    EngineAccess.install(new EngineAccess.Factory() {
      @Override
      public EngineAccess.Reference of(List<Limit> limits, long ticksPerSecond) {
        return ReferenceEngine.of(limits, ticksPerSecond);
      }

      @Override
      public EngineAccess.Reference ofGroup(Group group, long ticksPerSecond) {
        return ReferenceEngine.ofGroup(group, ticksPerSecond);
      }

      @Override
      public Builder generalPathOnly(Builder builder) {
        return builder.generalPathOnly();
      }
    });
  }

  /** Default bound on the number of keys an in-memory limiter holds. */
  public static final long DEFAULT_MAXIMUM_KEYS = 1_000_000;

  private Sluice() {}

  /** A rate limiter's builder; without {@link Builder#store} it builds an in-memory limiter. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A concurrency limiter's builder ({@link ConcurrencyLimiter#builder()}); without a store it
   * builds an in-memory limiter.
   */
  public static ConcurrencyLimiter.Builder concurrency() {
    return ConcurrencyLimiter.builder();
  }

  /** A bulkhead's builder ({@link Bulkhead#builder(int)}): at most {@code limit} in flight. */
  public static Bulkhead.Builder bulkhead(int limit) {
    return Bulkhead.builder(limit);
  }

  /** A health shedder's builder ({@link HealthShedder#builder()}). */
  public static HealthShedder.Builder health() {
    return HealthShedder.builder();
  }

  /**
   * Collects the settings of a limiter. Not thread-safe; each setting may be given once, and a
   * bad value fails at once with a message that names it.
   */
  public static final class Builder {
    private final List<Limit> limits = new ArrayList<>();
    private Clock clock;
    private Scheduler scheduler;
    private long maximumKeys = -1;
    private boolean fastPath = true;
    private DecisionStore store;
    private StoreFailure onStoreFailure;
    private CircuitBreakerSettings breakerSettings;
    private int denyCacheSize = -1;
    private LeaseSettings leases;
    private Group group;

    private Builder() {}

    /**
     * Makes this a limiter of a {@link Group}: each key is held to the group's assured limit and
     * ceilings, and the keys of one group share its parent, borrowing its idle capacity above
     * their assured limits. Instead of {@link #limit}; not with {@link #leases}. Its decisions
     * answer {@code tryAcquire}, {@code check} and {@code acquire} ({@code fillUp} and
     * {@code reserve} throw {@link UnsupportedOperationException}), and say whether they
     * {@link Decision#isBorrowed() borrowed}.
     */
    public Builder group(Group group) {
      if (this.group != null) {
        throw new IllegalStateException("group was already set to " + this.group);
      }
      Objects.requireNonNull(group, "group").requireAssured();
      this.group = group;
      return this;
    }

    /** Adds a limit; a key is admitted only when every limit admits it. */
    public Builder limit(Limit limit) {
      Objects.requireNonNull(limit, "limit");
      limits.add(limit);
      return this;
    }

    /** Adds several limits. */
    public Builder limits(Limit... limits) {
      for (Limit l : Objects.requireNonNull(limits, "limits")) {
        limit(l);
      }
      return this;
    }

    /** The clock; default {@link Clock#system()}. A manual clock makes tests exact. */
    public Builder clock(Clock clock) {
      if (this.clock != null) {
        throw new IllegalStateException("clock was already set to " + this.clock);
      }
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Where {@code acquireAsync} schedules its retries; default {@link Scheduler#system()}. */
    public Builder scheduler(Scheduler scheduler) {
      if (this.scheduler != null) {
        throw new IllegalStateException("scheduler was already set to " + this.scheduler);
      }
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * The most keys an in-memory limiter holds (default {@value #DEFAULT_MAXIMUM_KEYS_TEXT}).
     * Beyond it, new keys evict idle keys first, then the sampled key closest to empty, whose
     * level is forgotten. With a {@link #store}, it bounds only the in-memory fallback of
     * {@link StoreFailure#FALLBACK_IN_MEMORY}, and is refused otherwise.
     */
    public Builder maximumKeys(long maximumKeys) {
      if (this.maximumKeys != -1) {
        throw new IllegalStateException("maximumKeys was already set to " + this.maximumKeys);
      }
      if (maximumKeys <= 0) {
        throw new IllegalArgumentException("maximumKeys must be positive but was " + maximumKeys);
      }
      this.maximumKeys = maximumKeys;
      return this;
    }

    // read by the javadoc of maximumKeys ({@value}), not by code
    @SuppressWarnings("UnusedVariable")
    private static final String DEFAULT_MAXIMUM_KEYS_TEXT = "1,000,000";

    /**
     * Keeps the state in a shared store (Redis, PostgreSQL) instead of in memory; the store's
     * clock decides. The limiter does not close the store.
     */
    public Builder store(DecisionStore store) {
      if (this.store != null) {
        throw new IllegalStateException("store was already set to " + this.store);
      }
      this.store = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * What a store-backed limiter answers while its store fails; default
     * {@link StoreFailure#FAIL_CLOSED}.
     */
    public Builder onStoreFailure(StoreFailure policy) {
      if (this.onStoreFailure != null) {
        throw new IllegalStateException("onStoreFailure was already set to " + this.onStoreFailure);
      }
      this.onStoreFailure = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * When a store-backed limiter stops calling its store, and for how long; default
     * {@link CircuitBreakerSettings#defaults()} (opens after 3 unreachable calls in a row, or 50%
     * failures over at least 20 calls in 10 s; open 500 ms, then one trial call).
     */
    public Builder circuitBreaker(CircuitBreakerSettings settings) {
      if (this.breakerSettings != null) {
        throw new IllegalStateException("circuitBreaker was already set to " + this.breakerSettings);
      }
      this.breakerSettings = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /**
     * A local deny cache for a store-backed limiter, holding up to {@code maximumKeys} keys: once
     * the store rejects a key until T, {@code tryAcquire} of at least that cost is rejected
     * locally until T, without a round trip. Never admits more than the store would (a rejection
     * changes nothing, and other servers can only fill the bucket further); it may reject a key
     * that was reset, or whose limits were raised, elsewhere before T. Off by default.
     */
    public Builder localDenyCache(int maximumKeys) {
      if (this.denyCacheSize != -1) {
        throw new IllegalStateException("localDenyCache was already set to " + this.denyCacheSize);
      }
      if (maximumKeys <= 0) {
        throw new IllegalArgumentException("localDenyCache maximumKeys must be positive but was " + maximumKeys);
      }
      this.denyCacheSize = maximumKeys;
      return this;
    }

    /**
     * Fleet mode for a limiter on a {@link #store}: hot keys are answered from leases of the
     * shared bucket, taken ahead in the background and spent locally (no store call per
     * decision); cold keys keep one store call each. Admits at most the limit plus a bound set by
     * the settings (see {@link LeaseSettings} and {@code docs/fleet.md}). Limits must be buckets.
     * {@link RateLimiter#close()} gives back what is held.
     */
    public Builder leases(LeaseSettings settings) {
      if (this.leases != null) {
        throw new IllegalStateException("leases was already set to " + this.leases);
      }
      this.leases = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /** For tests: route even a single bucket through the general engine. */
    Builder generalPathOnly() {
      this.fastPath = false;
      return this;
    }

    /**
     * Builds the limiter: in memory, or on the {@link #store} if one was given.
     *
     * @throws IllegalStateException if no limit was added, or settings do not go together
     *     (store settings without a store; {@code maximumKeys} with a store that does not fall
     *     back to memory), with a sentence that says which
     * @throws IllegalArgumentException if a limit cannot be represented on the store's clock
     */
    public RateLimiter build() {
      if (group != null) {
        if (!limits.isEmpty()) {
          throw new IllegalStateException("a group's per-key limits are its assured limit and its"
              + " ceilings: give " + limits + " to Group.ceiling(...) instead of limit(...)");
        }
        if (leases != null) {
          throw new IllegalStateException("leases(...) does not apply to a group: every decision"
              + " of a group is one store call that charges the key and the group together");
        }
        if (onStoreFailure == StoreFailure.LOCAL_SHARE) {
          throw new IllegalStateException("onStoreFailure(LOCAL_SHARE) needs leases(...), which"
              + " a group does not take");
        }
      }
      if (limits.isEmpty() && group == null) {
        throw new IllegalStateException("no limit was set: call limit(...) at least once");
      }
      if (store == null) {
        String storeOnly = onStoreFailure != null ? "onStoreFailure"
            : breakerSettings != null ? "circuitBreaker"
            : denyCacheSize != -1 ? "localDenyCache"
            : leases != null ? "leases" : null;
        if (storeOnly != null) {
          throw new IllegalStateException(storeOnly + " applies to a limiter on a shared store,"
              + " and no store(...) was given: an in-memory limiter has no store to fail");
        }
      } else if (maximumKeys != -1 && onStoreFailure != StoreFailure.FALLBACK_IN_MEMORY) {
        throw new IllegalStateException("maximumKeys bounds the keys held in memory, and a"
            + " limiter on a store holds none there unless onStoreFailure(FALLBACK_IN_MEMORY)"
            + " is set (the store expires idle keys itself)");
      }
      if (onStoreFailure == StoreFailure.LOCAL_SHARE && leases == null) {
        throw new IllegalStateException("onStoreFailure(LOCAL_SHARE) divides each limit among the"
            + " instances of a fleet, and no leases(...) was given to say how many there are");
      }
      if (group != null) {
        if (store == null) {
          return new InMemoryGroupLimiter(group, clock == null ? Clock.system() : clock,
              scheduler == null ? Scheduler.system() : scheduler,
              maximumKeys == -1 ? DEFAULT_MAXIMUM_KEYS : maximumKeys);
        }
        if (!store.supportsGroups()) {
          throw new IllegalStateException("store " + store + " cannot decide groups"
              + " (DecisionStore.supportsGroups() is false): use RedisStore, PostgresStore or the"
              + " in-memory store");
        }
        return new StoreRateLimiter(group, store, clock == null ? Clock.system() : clock,
            scheduler == null ? Scheduler.system() : scheduler,
            onStoreFailure == null ? StoreFailure.FAIL_CLOSED : onStoreFailure,
            breakerSettings == null ? CircuitBreakerSettings.defaults() : breakerSettings,
            maximumKeys == -1 ? DEFAULT_MAXIMUM_KEYS : maximumKeys,
            Math.max(0, denyCacheSize));
      }
      if (store != null) {
        StoreRateLimiter exact = new StoreRateLimiter(limits, store,
            clock == null ? Clock.system() : clock,
            scheduler == null ? Scheduler.system() : scheduler,
            onStoreFailure == null ? StoreFailure.FAIL_CLOSED : onStoreFailure,
            breakerSettings == null ? CircuitBreakerSettings.defaults() : breakerSettings,
            maximumKeys == -1 ? DEFAULT_MAXIMUM_KEYS : maximumKeys,
            Math.max(0, denyCacheSize));
        return leases == null ? exact : new FleetRateLimiter(exact, leases);
      }
      return new InMemoryRateLimiter(limits,
          clock == null ? Clock.system() : clock,
          scheduler == null ? Scheduler.system() : scheduler,
          maximumKeys == -1 ? DEFAULT_MAXIMUM_KEYS : maximumKeys,
          fastPath);
    }
  }
}

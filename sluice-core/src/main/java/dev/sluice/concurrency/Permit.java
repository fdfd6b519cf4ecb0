package dev.sluice.concurrency;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * One permit in flight: it belongs to the key it was acquired under and ends exactly once, by a
 * release (with its {@link Outcome}) or by its lease running out. A second release, or a release
 * after the lease ended, changes nothing and says so ({@code false}). There is no release by key:
 * a permit cannot be given back to another key.
 *
 * <p>{@link #close()} releases it as a {@link Outcome#SUCCESS}, so that try-with-resources
 * releases it on every path; a call that failed says so first with {@link #release(Outcome)}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#what-it-promises">docs/concurrency.md, "What it promises"</a>.
 */
public final class Permit implements AutoCloseable {
  /** Who keeps the count a permit is part of: the in-memory key, or the store limiter. */
  interface Owner {
    /** Extends the permit's lease; false if it ended. */
    boolean renew(Permit p);

    /**
     * The permit was ended by a release (just now, once): its weight comes back. False if the
     * count had let it go already (its lease ran out in a shared store), true otherwise.
     */
    boolean ended(Permit p, Outcome outcome);

    /**
     * As {@link #ended}, without blocking the caller on a store (the default runs it here); the
     * future completes with what {@code ended} returns.
     */
    default CompletableFuture<Boolean> endedAsync(Permit p, Outcome outcome) {
      return CompletableFuture.completedFuture(ended(p, outcome));
    }

    /**
     * Whether the count still holds the permit (a lock-free count may let a lease go before the
     * permit learns of it); true by default, where the count marks a permit ended as it lets it
     * go.
     */
    default boolean holds(Permit p) {
      return true;
    }

    /** The id the permit's store knows it by; null when no store counts it. */
    default String sharedId(Permit p) {
      return null;
    }
  }

  private final Owner owner;
  private final String key;
  private final long id;
  private final int weight;
  private final long acquiredAt;
  /** The key's weight in flight when this permit was taken, itself included. */
  private final int inFlightAtStart;
  /**
   * How long its acquisition waited in the queue: set by the {@link Acquisition} that hands it
   * over, before the caller sees it.
   */
  long waitedNanos;
  /** Written under the owner's lock; read anywhere. */
  volatile long expiresAt;
  /** Where the in-memory owner keeps it among the key's permits (-1: nowhere); its lock guards it. */
  int slot = -1;
  /** 1 once ended: set once, by a compare-and-set. */
  private volatile int ended;
  private static final VarHandle ENDED;

  static {
    try {
      ENDED = MethodHandles.lookup().findVarHandle(Permit.class, "ended", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  Permit(Owner owner, String key, long id, int weight, long acquiredAt, long expiresAt,
      int inFlightAtStart) {
    this.owner = owner;
    this.key = key;
    this.id = id;
    this.weight = weight;
    this.acquiredAt = acquiredAt;
    this.expiresAt = expiresAt;
    this.inFlightAtStart = inFlightAtStart;
  }

  /** The key it is held under. */
  public String key() {
    return key;
  }

  /** Its weight: how many of the key's permits it counts as. */
  public int weight() {
    return weight;
  }

  /** Its number, unique within its limiter. */
  public long id() {
    return id;
  }

  /**
   * The id its store knows it by, for a permit of a limiter on a shared store; null for one counted
   * in memory (or granted by {@code FAIL_OPEN} while the store failed). With its key and weight it
   * names the permit to any instance on the same store ({@link ConcurrencyLimiter#sharedPermit}),
   * so that another instance can renew or release it. It cannot be guessed from other ids: 64 of
   * its bits are the limiter's own random number, 64 more a keyed hash of the permit's number.
   */
  public String sharedId() {
    return owner.sharedId(this);
  }

  /** When it was acquired, on the limiter's clock (nanoseconds). */
  public long acquiredAtNanos() {
    return acquiredAt;
  }

  /** When its lease ends unless renewed, on the limiter's clock (nanoseconds). */
  public long expiresAtNanos() {
    return expiresAt;
  }

  /** Whether it is still in flight: neither released nor expired. */
  public boolean isActive() {
    return ended == 0 && owner.holds(this);
  }

  /**
   * Extends the lease by the limiter's lease time from now, for a call that runs long.
   *
   * @return false if the permit has already ended (released, or its lease ran out): the call
   *     then holds no permit and should stop or acquire again
   */
  public boolean renew() {
    return owner.renew(this);
  }

  /**
   * Ends the permit with {@code outcome} ({@link Outcome#EXPIRED} is the limiter's to give).
   *
   * @return true if this call ended it; false if it had already ended (then nothing changes)
   */
  public boolean release(Outcome outcome) {
    InMemoryConcurrencyLimiter.checkRelease(outcome);
    return end(outcome);
  }

  /**
   * As {@link #release}, without blocking the calling thread on a shared store (for a reactive
   * application, which releases on an event loop): the permit ends now, here, exactly once; the
   * future completes with what {@code release} would return once the store has answered (a
   * failure of the store completes it with true: the permit comes back when its lease ends).
   */
  public CompletableFuture<Boolean> releaseAsync(Outcome outcome) {
    InMemoryConcurrencyLimiter.checkRelease(outcome);
    if (!markEnded()) {
      return CompletableFuture.completedFuture(false);
    }
    return owner.endedAsync(this, outcome);
  }

  /** Releases it as a {@link Outcome#SUCCESS} if it has not ended. */
  @Override
  public void close() {
    end(Outcome.SUCCESS);
  }

  /** Ends it once: the first caller gives the weight back. */
  boolean end(Outcome outcome) {
    if (!markEnded()) {
      return false;
    }
    return owner.ended(this, outcome);
  }

  /** Marks it ended; true for the one caller that did (who then gives the weight back). */
  boolean markEnded() {
    return ENDED.compareAndSet(this, 0, 1);
  }

  int inFlightAtStart() {
    return inFlightAtStart;
  }

  @Override
  public String toString() {
    return "Permit[" + key + " #" + id + ", weight " + weight
        + (ended != 0 ? ", ended" : "") + "]";
  }
}

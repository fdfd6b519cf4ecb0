package dev.sluice.internal;

import dev.sluice.spi.PermitStore;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitGroup;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * One concurrency limit's view of a shared {@link PermitStore}: its keys carry the limit's name
 * ({@code name/key}), so several concurrency limiters share one store without sharing permits. It
 * forwards failure domains (a Redis Cluster's breakers stay per node). Closing does nothing: the
 * store belongs to whoever made it.
 *
 * <pre>{@code
 * ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(20)
 *     .store(new PrefixedPermitStore(redis, "db")).build();
 * }</pre>
 */
public final class PrefixedPermitStore implements PermitStore {
  private final PermitStore store;
  private final String prefix;

  /**
   * The view of {@code store} for the limit {@code name}.
   *
   * @throws IllegalArgumentException if the name is empty
   */
  public PrefixedPermitStore(PermitStore store, String name) {
    this.store = Objects.requireNonNull(store, "store");
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("a limit name must not be empty but was "
          + (name == null ? "null" : "''"));
    }
    this.prefix = name + "/";
  }

  @Override
  public PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return store.acquire(prefix + key, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> acquireAsync(String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return store.acquireAsync(prefix + key, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
    return store.renew(prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public PermitReply release(String key, String permitId, int weight) {
    return store.release(prefix + key, permitId, weight);
  }

  @Override
  public CompletableFuture<PermitReply> releaseAsync(String key, String permitId, int weight) {
    return store.releaseAsync(prefix + key, permitId, weight);
  }

  @Override
  public PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
    return store.cancel(prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> cancelAsync(String key, String permitId, int weight,
      long leaseMillis) {
    return store.cancelAsync(prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public int inFlight(String key) {
    return store.inFlight(prefix + key);
  }

  @Override
  public void resetPermits(String key) {
    store.resetPermits(prefix + key);
  }

  @Override
  public Object permitFailureDomain(String key) {
    return store.permitFailureDomain(prefix + key);
  }

  @Override
  public boolean supportsPermitGroups() {
    return store.supportsPermitGroups();
  }

  @Override
  public PermitReply acquire(PermitGroup group, String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return store.acquire(named(group), prefix + key, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> acquireAsync(PermitGroup group, String key,
      String permitId, int weight, int ceiling, long leaseMillis) {
    return store.acquireAsync(named(group), prefix + key, permitId, weight, ceiling,
        leaseMillis);
  }

  @Override
  public PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return store.renew(prefix + group, prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public PermitReply release(String group, String key, String permitId, int weight) {
    return store.release(prefix + group, prefix + key, permitId, weight);
  }

  @Override
  public CompletableFuture<PermitReply> releaseAsync(String group, String key, String permitId,
      int weight) {
    return store.releaseAsync(prefix + group, prefix + key, permitId, weight);
  }

  @Override
  public PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return store.cancel(prefix + group, prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> cancelAsync(String group, String key, String permitId,
      int weight, long leaseMillis) {
    return store.cancelAsync(prefix + group, prefix + key, permitId, weight, leaseMillis);
  }

  @Override
  public int inFlight(String group, String key) {
    return store.inFlight(prefix + group, key == null ? null : prefix + key);
  }

  @Override
  public void resetPermits(String group, String key) {
    store.resetPermits(prefix + group, key == null ? null : prefix + key);
  }

  @Override
  public Object groupPermitFailureDomain(String group) {
    return store.groupPermitFailureDomain(prefix + group);
  }

  private PermitGroup named(PermitGroup g) {
    return new PermitGroup(prefix + g.name(), g.limit(), g.borrowCeiling(), g.assured());
  }

  @Override
  public String toString() {
    return store + " (" + prefix + ")";
  }
}

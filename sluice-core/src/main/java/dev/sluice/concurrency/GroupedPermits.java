package dev.sluice.concurrency;

import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.StoreKeys;
import java.util.concurrent.CompletableFuture;

/**
 * A store's grouped permits seen as plain keys: each call on a key goes to the store's grouped
 * method with the key's group (and, for an acquire, its terms), so that the store limiter's
 * logic is the same with and without a {@link ConcurrencyGroup}.
 */
final class GroupedPermits implements PermitStore {
  private final PermitStore store;
  private final ConcurrencyGroup group;

  GroupedPermits(PermitStore store, ConcurrencyGroup group) {
    this.store = store;
    this.group = group;
  }

  /** The key's terms; a group that is no valid store key is the caller's error, named. */
  PermitGroup terms(String key) {
    String name = group.groupOf(key);
    String problem = StoreKeys.problem(name);
    if (problem != null) {
      throw new IllegalArgumentException("the group of key '" + key + "' " + problem);
    }
    return group.termsOf(key);
  }

  @Override
  public PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return store.acquire(terms(key), key, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> acquireAsync(String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return store.acquireAsync(terms(key), key, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
    return store.renew(group.groupOf(key), key, permitId, weight, leaseMillis);
  }

  @Override
  public PermitReply release(String key, String permitId, int weight) {
    return store.release(group.groupOf(key), key, permitId, weight);
  }

  @Override
  public CompletableFuture<PermitReply> releaseAsync(String key, String permitId, int weight) {
    return store.releaseAsync(group.groupOf(key), key, permitId, weight);
  }

  @Override
  public PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
    return store.cancel(group.groupOf(key), key, permitId, weight, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> cancelAsync(String key, String permitId, int weight,
      long leaseMillis) {
    return store.cancelAsync(group.groupOf(key), key, permitId, weight, leaseMillis);
  }

  @Override
  public int inFlight(String key) {
    return store.inFlight(group.groupOf(key), key);
  }

  @Override
  public void resetPermits(String key) {
    store.resetPermits(group.groupOf(key), key);
  }

  @Override
  public Object permitFailureDomain(String key) {
    return store.groupPermitFailureDomain(group.groupOf(key));
  }

  @Override
  public String toString() {
    return store.toString();
  }
}

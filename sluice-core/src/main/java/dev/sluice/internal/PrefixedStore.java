package dev.sluice.internal;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.Observation;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * One policy's view of a shared store: its keys carry the policy's name ({@code policy/key}), so
 * several limiters with different limits share one store without sharing buckets. It forwards
 * groups, failure domains (a Redis Cluster's breakers stay per node), combining and pings.
 * Closing does nothing: the store belongs to whoever made it.
 *
 * <pre>{@code
 * RateLimiter api = Sluice.builder().limit(apiLimit).store(new PrefixedStore(redis, "api")).build();
 * RateLimiter login = Sluice.builder().limit(loginLimit).store(new PrefixedStore(redis, "login")).build();
 * }</pre>
 */
public final class PrefixedStore implements DecisionStore {
  private final DecisionStore store;
  private final String prefix;

  /**
   * The view of {@code store} for {@code policy}.
   *
   * @throws IllegalArgumentException if the policy name is empty
   */
  public PrefixedStore(DecisionStore store, String policy) {
    this.store = Objects.requireNonNull(store, "store");
    if (policy == null || policy.isEmpty()) {
      throw new IllegalArgumentException("a policy name must not be empty but was "
          + (policy == null ? "null" : "''"));
    }
    this.prefix = policy + "/";
  }

  @Override
  public long ticksPerSecond() {
    return store.ticksPerSecond();
  }

  @Override
  public Observation apply(String key, StoreRequest request) {
    return store.apply(prefix + key, request);
  }

  @Override
  public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
    return store.applyAsync(prefix + key, request);
  }

  @Override
  public CompletableFuture<Integer> liveInstances(String fleet, String instance, long ttlMillis) {
    return store.liveInstances(prefix + fleet, instance, ttlMillis);
  }

  @Override
  public void reset(String key) {
    store.reset(prefix + key);
  }

  @Override
  public boolean supportsGroups() {
    return store.supportsGroups();
  }

  @Override
  public Observation applyGroup(String group, String key, StoreRequest request) {
    return store.applyGroup(prefix + group, key, request);
  }

  @Override
  public CompletableFuture<Observation> applyGroupAsync(String group, String key,
      StoreRequest request) {
    return store.applyGroupAsync(prefix + group, key, request);
  }

  @Override
  public void resetGroupMember(String group, String key) {
    store.resetGroupMember(prefix + group, key);
  }

  @Override
  public boolean combinesDecisions() {
    return store.combinesDecisions();
  }

  @Override
  public Object failureDomain(String key) {
    return store.failureDomain(prefix + key);
  }

  @Override
  public Object groupFailureDomain(String group) {
    return store.groupFailureDomain(prefix + group);
  }

  @Override
  public void ping() {
    store.ping();
  }

  @Override
  public String toString() {
    return prefix + " of " + store;
  }
}

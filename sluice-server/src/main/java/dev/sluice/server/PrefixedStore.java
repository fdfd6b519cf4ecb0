package dev.sluice.server;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import java.util.concurrent.CompletableFuture;

/** One policy's view of a shared store: its keys carry the policy's name. Closing does nothing. */
final class PrefixedStore implements DecisionStore {
  private final DecisionStore store;
  private final String prefix;

  PrefixedStore(DecisionStore store, String policy) {
    this.store = store;
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
}

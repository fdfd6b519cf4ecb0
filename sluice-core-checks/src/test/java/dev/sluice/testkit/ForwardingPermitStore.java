package dev.sluice.testkit;

import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;

/** A store that forwards every call to another; tests override the one call they change. */
class ForwardingPermitStore implements PermitStore {
  private final PermitStore store;

  ForwardingPermitStore(PermitStore store) {
    this.store = store;
  }

  @Override
  public PermitReply acquire(String key, String id, int weight, int ceiling, long lease) {
    return store.acquire(key, id, weight, ceiling, lease);
  }

  @Override
  public PermitReply renew(String key, String id, int weight, long lease) {
    return store.renew(key, id, weight, lease);
  }

  @Override
  public PermitReply release(String key, String id, int weight) {
    return store.release(key, id, weight);
  }

  @Override
  public PermitReply cancel(String key, String id, int weight, long lease) {
    return store.cancel(key, id, weight, lease);
  }

  @Override
  public int inFlight(String key) {
    return store.inFlight(key);
  }

  @Override
  public void resetPermits(String key) {
    store.resetPermits(key);
  }

  @Override
  public boolean supportsPermitGroups() {
    return store.supportsPermitGroups();
  }

  @Override
  public PermitReply acquire(PermitGroup group, String key, String id, int weight, int ceiling,
      long lease) {
    return store.acquire(group, key, id, weight, ceiling, lease);
  }

  @Override
  public PermitReply renew(String group, String key, String id, int weight, long lease) {
    return store.renew(group, key, id, weight, lease);
  }

  @Override
  public PermitReply cancel(String group, String key, String id, int weight, long lease) {
    return store.cancel(group, key, id, weight, lease);
  }

  @Override
  public PermitReply release(String group, String key, String id, int weight) {
    return store.release(group, key, id, weight);
  }

  @Override
  public int inFlight(String group, String key) {
    return store.inFlight(group, key);
  }

  @Override
  public void resetPermits(String group, String key) {
    store.resetPermits(group, key);
  }
}

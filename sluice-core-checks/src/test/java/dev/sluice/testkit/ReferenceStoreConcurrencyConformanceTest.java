package dev.sluice.testkit;

/**
 * The store concurrency limiter, on the reference store, passes the concurrency conformance
 * suite: its own logic (waiters, failure paths aside) without a server.
 */
class ReferenceStoreConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return ReferencePermitStore::new;
  }
}

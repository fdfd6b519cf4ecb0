package dev.sluice.testkit;

/** The in-memory concurrency limiter passes the concurrency conformance suite. */
class InMemoryConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> null;
  }
}

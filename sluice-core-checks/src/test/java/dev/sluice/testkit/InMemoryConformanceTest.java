package dev.sluice.testkit;

/** The in-memory store passes the whole conformance suite. */
class InMemoryConformanceTest extends ConformanceSuite {
  @Override
  protected LimiterFactory factory() {
    return new InMemoryFactory();
  }
}

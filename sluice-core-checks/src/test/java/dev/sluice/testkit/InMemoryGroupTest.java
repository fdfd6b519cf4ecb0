package dev.sluice.testkit;

/** The group suite on the in-memory store. */
class InMemoryGroupTest extends GroupSuite {
  @Override
  protected LimiterFactory factory() {
    return new InMemoryFactory();
  }
}

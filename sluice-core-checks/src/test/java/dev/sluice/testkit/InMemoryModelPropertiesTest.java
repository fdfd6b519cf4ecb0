package dev.sluice.testkit;

/** The in-memory store agrees with the reference model, decision by decision. */
class InMemoryModelPropertiesTest extends ModelProperties {
  @Override
  protected LimiterFactory factory() {
    return new InMemoryFactory();
  }
}

package dev.sluice.testkit;

/** Two keys of one group racing on its parent: the key's monitor and the parent's CAS. */
public class InMemoryGroupLinearizabilityTest extends GroupLinearizabilitySuite {
  public InMemoryGroupLinearizabilityTest() {
    super(new InMemoryFactory());
  }
}

package dev.sluice.testkit;

import dev.sluice.Limit;
import dev.sluice.Rate;
import java.util.List;

/** One leaky bucket: the lock-free single-long path, its operations racing at one instant. */
public class InMemoryLinearizabilityTest extends LinearizabilitySuite {
  public InMemoryLinearizabilityTest() {
    super(new InMemoryFactory(), List.of(Limit.leakyBucket(2, Rate.perSecond(2))), false);
  }
}

package dev.sluice.testkit;

import dev.sluice.Limit;
import dev.sluice.Rate;
import java.util.List;

/**
 * One leaky bucket at 3/s, whose unit of cost is 333,333,333 1/3 ns: the lock-free path counts
 * it in steps of 1/3 ns in its one long, its operations racing at one instant.
 */
public class InMemoryScaledLinearizabilityTest extends LinearizabilitySuite {
  public InMemoryScaledLinearizabilityTest() {
    super(new InMemoryFactory(), List.of(Limit.leakyBucket(2, Rate.perSecond(3))), false);
  }
}

package dev.sluice.testkit;

import dev.sluice.Limit;
import dev.sluice.Rate;
import java.time.Duration;
import java.util.List;

/** A bucket with a penalty and a sliding window on one key: the per-key-lock path, clock racing too. */
public class InMemorySeveralLimitsLinearizabilityTest extends LinearizabilitySuite {
  public InMemorySeveralLimitsLinearizabilityTest() {
    super(new InMemoryFactory(), List.of(
        Limit.leakyBucket(2, Rate.perSecond(2)).withPenalty(Duration.ofMillis(500)),
        Limit.slidingWindow(3, Duration.ofSeconds(1))), true);
  }
}

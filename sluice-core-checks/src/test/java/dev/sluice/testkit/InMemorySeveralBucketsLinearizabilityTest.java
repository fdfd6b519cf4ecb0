package dev.sluice.testkit;

import dev.sluice.Limit;
import dev.sluice.Rate;
import java.time.Duration;
import java.util.List;

/**
 * Two buckets on one key, with the clock racing: the spin-locked path, and its checks and
 * rejections decided without the lock.
 */
public class InMemorySeveralBucketsLinearizabilityTest extends LinearizabilitySuite {
  public InMemorySeveralBucketsLinearizabilityTest() {
    super(new InMemoryFactory(), List.of(
        Limit.leakyBucket(2, Rate.perSecond(2)),
        Limit.leakyBucket(3, Rate.perSecond(1)).withPenalty(Duration.ofMillis(500))), true);
  }
}

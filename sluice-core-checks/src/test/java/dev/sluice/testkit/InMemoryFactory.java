package dev.sluice.testkit;

import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.util.List;

/** The in-memory store, on the manual clock. */
public final class InMemoryFactory implements LimiterFactory {
  @Override
  public RateLimiter create(ManualClock clock, List<Limit> limits) {
    return Sluice.builder().limits(limits.toArray(new Limit[0])).clock(clock).scheduler(clock).build();
  }

  @Override
  public RateLimiter createGroup(ManualClock clock, dev.sluice.Group group) {
    return Sluice.builder().group(group).clock(clock).scheduler(clock).build();
  }
}

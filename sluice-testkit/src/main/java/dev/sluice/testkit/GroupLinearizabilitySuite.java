package dev.sluice.testkit;

import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Param;
import org.jetbrains.kotlinx.lincheck.paramgen.IntGen;
import org.junit.jupiter.api.Test;

/**
 * Lincheck linearizability of a {@link Group}: two keys of one group race on their shared parent
 * (parent 3, reserve 1; each key assured 1, ceiling 2), so every admission, assured or borrowed,
 * must appear to happen at once on the key and the parent. A store module extends this class with
 * a public no-argument constructor. Sizes come from {@code -Dsluice.lincheck.iterations}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class GroupLinearizabilitySuite {
  private final ManualClock clock = new ManualClock(1_000_000_000L);
  private final RateLimiter limiter;

  protected GroupLinearizabilitySuite(LimiterFactory factory) {
    this.limiter = factory.createGroup(clock, Group.sharing(Limit.leakyBucket(3, Rate.perSecond(1)))
        .assured(Limit.leakyBucket(1, Rate.perSecond(1)))
        .ceiling(Limit.leakyBucket(2, Rate.perSecond(1)))
        .reserve(1));
  }

  private static String key(int k) {
    return k == 0 ? "a" : "b";
  }

  @Operation
  public String tryAcquire(@Param(gen = IntGen.class, conf = "0:1") int k,
      @Param(gen = IntGen.class, conf = "1:3") int halves) {
    return limiter.tryAcquire(key(k), halves * 0.5).toString();
  }

  @Operation
  public String check(@Param(gen = IntGen.class, conf = "0:1") int k,
      @Param(gen = IntGen.class, conf = "1:3") int halves) {
    return limiter.check(key(k), halves * 0.5).toString();
  }

  @Operation
  public void reset(@Param(gen = IntGen.class, conf = "0:1") int k) {
    limiter.reset(key(k));
  }

  @Test
  public void linearizable_underModelChecking() {
    LinearizabilitySuite.modelCheck(getClass());
  }

  @Test
  public void linearizable_underStress() {
    LinearizabilitySuite.stress(getClass());
  }
}

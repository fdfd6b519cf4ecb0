package dev.sluice.testkit;

import dev.sluice.Decision;
import dev.sluice.KeyLimiter;
import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Param;
import org.jetbrains.kotlinx.lincheck.paramgen.IntGen;
import org.jetbrains.kotlinx.lincheck.strategy.managed.modelchecking.ModelCheckingOptions;
import org.jetbrains.kotlinx.lincheck.strategy.stress.StressOptions;
import org.junit.jupiter.api.Test;

/**
 * Lincheck linearizability of every operation on one key. A store module extends this class
 * with a public no-argument constructor that passes its factory and the limits to check. Sizes
 * come from {@code -Dsluice.lincheck.iterations} (scenarios: 15 by default, 30 with
 * {@code -Pthorough}) and the two below.
 *
 * <p>With {@code concurrentClock}, advancing the clock is itself a concurrent operation: right
 * for a store that reads the clock inside its atomic step (a lock, a script, a statement). A
 * lock-free store reads the clock just before its compare-and-set, so a decision may commit as
 * of a reading a few nanoseconds older than the newest; its accounting stays exact (a non-empty
 * bucket's update does not depend on the time) and is checked by the stress tests, while
 * Lincheck checks its operations racing at one instant.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class LinearizabilitySuite {
  private final ManualClock clock = new ManualClock(1_000_000_000L);
  private final RateLimiter limiter;
  /** The same key through {@link RateLimiter#forKey}: one more path to the key's state. */
  private final KeyLimiter bound;
  private final boolean concurrentClock;

  protected LinearizabilitySuite(LimiterFactory factory, List<Limit> limits,
      boolean concurrentClock) {
    this.limiter = factory.create(clock, limits);
    this.bound = limiter.forKey("k");
    this.concurrentClock = concurrentClock;
  }

  private static String summary(Decision d) {
    return d.toString();
  }

  @Operation
  public String tryAcquire(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    return summary(limiter.tryAcquire("k", halves * 0.5));
  }

  @Operation
  public String check(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    return summary(limiter.check("k", halves * 0.5));
  }

  @Operation
  public String fillUp(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    return summary(limiter.fillUp("k", halves * 0.5));
  }

  @Operation
  public String reserve(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    try {
      return summary(limiter.reserve("k", halves * 0.5));
    } catch (UnsupportedOperationException windows) {
      return "unsupported";
    }
  }

  @Operation
  public String boundTryAcquire(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    return summary(bound.tryAcquire(halves * 0.5));
  }

  @Operation
  public String boundCheck(@Param(gen = IntGen.class, conf = "1:4") int halves) {
    return summary(bound.check(halves * 0.5));
  }

  @Operation
  public void advance() {
    if (concurrentClock) {
      clock.advanceNanos(250_000_000L);
    }
  }

  @Operation
  public void reset() {
    limiter.reset("k");
  }

  /**
   * Scenarios per suite, each a random choice of operations for each thread: 15 by default, 30
   * with {@code -Pthorough} ({@code -Dsluice.lincheck.iterations}).
   */
  private static int iterations() {
    return Integer.getInteger("sluice.lincheck.iterations", 15);
  }

  /**
   * Interleavings the model checker explores per scenario: 50 by default, 300 with
   * {@code -Pthorough} ({@code -Dsluice.lincheck.invocations}). Every scenario, and so every
   * operation, is checked at either size; the thorough one explores more orders of each.
   */
  private static int invocations() {
    return Integer.getInteger("sluice.lincheck.invocations", 50);
  }

  /** Runs per scenario under stress: 500 by default, 2,000 with {@code -Pthorough}. */
  private static int stressInvocations() {
    return Integer.getInteger("sluice.lincheck.stress.invocations", 500);
  }

  @Test
  public void linearizable_underModelChecking() {
    modelCheck(getClass());
  }

  @Test
  public void linearizable_underStress() {
    stress(getClass());
  }

  /**
   * Lincheck's model checking of a suite's operations, at the sizes every suite uses, after one
   * run of each operation outside it: classes initialized and call sites bootstrapped for the
   * first time inside the model checker (lambdas, string concatenation) made it report a hang and
   * {@code BootstrapMethodError}s when such a suite ran first in its JVM.
   */
  static void modelCheck(Class<?> suite) {
    warmUp(suite);
    LinChecker.check(suite, new ModelCheckingOptions()
        .iterations(iterations()).invocationsPerIteration(invocations()).threads(2)
        .actorsPerThread(3));
  }

  /** Runs every operation of a fresh instance of {@code suite} once, with each int argument 1. */
  static void warmUp(Class<?> suite) {
    try {
      Object instance = suite.getDeclaredConstructor().newInstance();
      for (Method m : suite.getMethods()) {
        if (!m.isAnnotationPresent(Operation.class)) {
          continue;
        }
        Object[] args = new Object[m.getParameterCount()];
        Arrays.fill(args, 1);
        m.invoke(instance, args);
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("could not warm " + suite.getName() + " up", e);
    }
  }

  /** Lincheck's stress run of a suite's operations, at the sizes every suite uses. */
  static void stress(Class<?> suite) {
    LinChecker.check(suite, new StressOptions()
        .iterations(iterations()).invocationsPerIteration(stressInvocations()).threads(3)
        .actorsPerThread(3));
  }
}

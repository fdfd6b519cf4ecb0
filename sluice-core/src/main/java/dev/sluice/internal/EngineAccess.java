package dev.sluice.internal;

import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Sluice;
import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.spi.StoreRequest;
import java.util.List;

/**
 * How {@link dev.sluice.spi.StoreReference}, in the SPI package, reaches the engine, whose
 * classes are package-private in {@code dev.sluice}: the engine installs its factory here when
 * {@code dev.sluice.Sluice} is initialized (the JDK's "shared secrets" pattern). Not API.
 */
public final class EngineAccess {
  private static volatile Factory factory;

  private EngineAccess() {}

  /** The reference engine of one set of limits (see {@link dev.sluice.spi.StoreReference}). */
  public interface Reference {
    boolean isGroup();
    StoreRequest request(Operation operation, double cost);
    StoreRequest request(Operation operation, double cost, long count);
    String layout();
    long[] initialState();
    long[] next(long[] state, long now, Operation operation, double cost);
    long[] next(long[] state, long now, Operation operation, double cost, long count);
    long[] next(long[] state, long now, StoreRequest request);
    long granted(long[] state, long now, double cost, long want);
    Decision decision(long[] stateBefore, long now, Operation operation, double cost);
    long idleAfter(long[] state, long now);
    long keyIdleAfter(long[] state, long now);
    long groupIdleAfter(long[] state, long now);
  }

  /** Makes references. */
  public interface Factory {
    Reference of(List<Limit> limits, long ticksPerSecond);

    Reference ofGroup(Group group, long ticksPerSecond);

    /** The builder, set to route even a single bucket through the general engine. */
    Sluice.Builder generalPathOnly(Sluice.Builder builder);
  }

  /**
   * For benchmarks that measure what the lock-free path buys: the builder, set to route even a
   * single bucket through the general engine.
   */
  public static Sluice.Builder generalPathOnly(Sluice.Builder builder) {
    return factory().generalPathOnly(builder);
  }

  /** Called once, by the engine. */
  public static void install(Factory f) {
    factory = f;
  }

  /** The engine's factory, initializing the engine first if nothing has yet. */
  public static Factory factory() {
    Factory f = factory;
    if (f == null) {
      try {
        Class.forName("dev.sluice.Sluice", true, EngineAccess.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException("Sluice's core is incomplete: dev.sluice.Sluice is missing", e);
      }
      f = factory;
    }
    return f;
  }
}

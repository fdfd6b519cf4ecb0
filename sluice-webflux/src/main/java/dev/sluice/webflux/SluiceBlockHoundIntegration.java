package dev.sluice.webflux;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound, when an application's tests install it, what in Sluice looks like blocking
 * and is not:
 *
 * <ul>
 *   <li>the in-memory bucket's back-off after a lost compare-and-set, at most 64
 *       {@code Thread.onSpinWait()} hints (well under a microsecond), which lets the winning core
 *       keep the cache line;
 *   <li>the Redis store's asynchronous dispatch ({@code RedisStore.evalAsync}), inside which
 *       Lettuce takes its connection's writer lock ({@code SharedLock}, a {@code ReentrantLock}
 *       held for the few instructions of a write) when several threads write at once. BlockHound
 *       refusing it would throw inside Lettuce with the lock held and wedge the connection
 *       (https://github.com/redis/lettuce/issues/3804); only Sluice's own calls are allowed, not the application's.
 * </ul>
 *
 * Loaded by BlockHound through {@code ServiceLoader}; without BlockHound on the classpath it is
 * never touched.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#webflux">docs/spring.md, "WebFlux"</a>.
 */
// BlockHound's types are optional (requires static): not re-exported to Sluice's users.
@SuppressWarnings("exports")
public final class SluiceBlockHoundIntegration implements BlockHoundIntegration {
  /** For the service loader. */
  public SluiceBlockHoundIntegration() {}

  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.allowBlockingCallsInside("dev.sluice.LockFreeBucket", "backOff");
    builder.allowBlockingCallsInside("dev.sluice.redis.RedisStore", "evalAsync");
  }
}

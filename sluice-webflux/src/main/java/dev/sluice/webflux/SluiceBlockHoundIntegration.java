package dev.sluice.webflux;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound, when an application's tests install it, what in Sluice looks like blocking
 * and is not: the in-memory bucket's back-off after a lost compare-and-set, at most 64
 * {@code Thread.onSpinWait()} hints (well under a microsecond), which lets the winning core keep
 * the cache line. Loaded by BlockHound through {@code ServiceLoader}; without BlockHound on the
 * classpath it is never touched.
 */
public final class SluiceBlockHoundIntegration implements BlockHoundIntegration {
  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.allowBlockingCallsInside("dev.sluice.LockFreeBucket", "backOff");
  }
}

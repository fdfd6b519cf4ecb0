package dev.sluice;

import java.util.Objects;

/**
 * A key limiter that forwards every call to its limiter's keyed method (the default); the
 * in-memory single bucket's (LockFreeBucket) overrides the decisions it can make without the
 * key's lookup.
 */
class ForwardingKeyLimiter implements KeyLimiter {
  private final RateLimiter limiter;
  private final String key;

  ForwardingKeyLimiter(RateLimiter limiter, String key) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    this.key = Checks.key(key);
  }

  @Override
  public final String key() {
    return key;
  }

  @Override
  public final RateLimiter limiter() {
    return limiter;
  }

  @Override
  public final String toString() {
    return "KeyLimiter[" + key + " of " + limiter + "]";
  }
}

package dev.sluice;

import java.util.Objects;

/** A key limiter that forwards every call to its limiter's keyed method (the default). */
final class ForwardingKeyLimiter implements KeyLimiter {
  private final RateLimiter limiter;
  private final String key;

  ForwardingKeyLimiter(RateLimiter limiter, String key) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    this.key = Checks.key(key);
  }

  @Override
  public String key() {
    return key;
  }

  @Override
  public RateLimiter limiter() {
    return limiter;
  }

  @Override
  public String toString() {
    return "KeyLimiter[" + key + " of " + limiter + "]";
  }
}

package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import io.github.bucket4j.Bucket;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import java.time.Duration;

/**
 * Limiters configured alike: a rate so high that every call is admitted ("mostly success", as in
 * Bucket4j's own TryConsumeMostlySuccess), so that the benchmark measures the cost of a decision.
 */
final class Peers {
  static final double RATE = 1_000_000_000d;

  private Peers() {}

  /** The limit every Sluice limiter here is held to. */
  static Limit limit() {
    return Limit.leakyBucket(RATE, Rate.perSecond(RATE));
  }

  static RateLimiter sluice(long maximumKeys) {
    return Sluice.builder()
        .limit(limit())
        .maximumKeys(maximumKeys)
        .build();
  }

  static Bucket bucket4j() {
    return Bucket.builder()
        .addLimit(limit -> limit.capacity((long) RATE).refillGreedy((long) RATE, Duration.ofSeconds(1)))
        .build();
  }

  static com.google.common.util.concurrent.RateLimiter guava() {
    return com.google.common.util.concurrent.RateLimiter.create(RATE);
  }

  static io.github.resilience4j.ratelimiter.RateLimiter resilience4j(String name) {
    return io.github.resilience4j.ratelimiter.RateLimiter.of(name, RateLimiterConfig.custom()
        .limitForPeriod(Integer.MAX_VALUE)
        .limitRefreshPeriod(Duration.ofSeconds(1))
        .timeoutDuration(Duration.ZERO)
        .build());
  }
}

/**
 * Sluice: exact rate limiting built around the leaky bucket.
 *
 * <p>{@link dev.sluice.Sluice#builder()} builds a {@link dev.sluice.RateLimiter} from one or more
 * {@link dev.sluice.Limit limits} (leaky bucket, token bucket, GCRA, fixed window, sliding-window
 * counter), in memory or on a shared store; every call returns a {@link dev.sluice.Decision}.
 * {@code docs/semantics.md} states what every store computes, exactly.
 */
package dev.sluice;

/**
 * Micrometer meters for any Sluice limiter: {@link dev.sluice.micrometer.SluiceMetrics#monitor}
 * wraps a {@link dev.sluice.RateLimiter} so that every decision is counted and timed by
 * operation, outcome, degradation and the limit that decided ({@code sluice.decisions}), and
 * binds the limiter's own statistics (store errors, degraded decisions, the circuit breaker, keys
 * held and evicted, leases) as gauges and function counters. Request values (keys) never become
 * tags. The meters and their tags are listed in {@code docs/operations.md}.
 */
package dev.sluice.micrometer;

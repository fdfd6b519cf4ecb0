/**
 * Concurrency limits: at most N permits in flight per key, where a rate limit counts requests per
 * second. Seed 002's other half: "rate limit by client, load shed by backend health". A permit is
 * held while a call runs and released when it ends, exactly once, with its outcome; a permit whose
 * holder dies comes back after its lease. Waiting is bounded, first in first out or last in first
 * out, blocking or asynchronous. See {@code docs/concurrency.md}.
 *
 * <pre>{@code
 * ConcurrencyLimiter limiter = ConcurrencyLimiter.builder().limit(10).build();
 * Acquisition a = limiter.tryAcquire("db");
 * if (a.isAcquired()) {
 *   try (Permit p = a.permit()) {   // released as a success unless the call says otherwise
 *     query();
 *   }
 * }
 * }</pre>
 */
package dev.sluice.concurrency;

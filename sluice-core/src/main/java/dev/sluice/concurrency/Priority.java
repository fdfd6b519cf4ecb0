package dev.sluice.concurrency;

/**
 * How much an acquisition matters when permits run short (Google SRE's criticality, Stripe's
 * fleet-usage shedder): a limiter may keep a share of each key's permits for the higher ones
 * ({@link ConcurrencyLimiter.Builder#share}), and serves its waiters highest first. Listed from
 * the highest.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#priorities-keeping-capacity-for-critical-traffic">docs/concurrency.md, "Priorities: keeping capacity for critical traffic"</a>.
 */
public enum Priority {
  /** Traffic whose loss is an outage: a checkout, a login. */
  CRITICAL,
  /** Everyday traffic; what an acquisition without a priority is. */
  NORMAL,
  /** Traffic that may wait or fail first: prefetches, reports, retries, batch jobs. */
  SHEDDABLE
}

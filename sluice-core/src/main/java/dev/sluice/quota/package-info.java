/**
 * Quotas as data: a limit for one key (or every key with a prefix) of a policy, kept in a store
 * beside the counters instead of in a configuration file, changed at run time, with an expiry, a
 * reason and an audit trail. {@link dev.sluice.quota.Quotas} caches a store's quotas for the
 * limiters, which look a key's quota up on each decision; where no quota exists the policy's
 * own limits apply.
 */
package dev.sluice.quota;

package dev.sluice.server;

import dev.sluice.LeaseStats;
import dev.sluice.LimiterStats;

/**
 * One policy's store and lease figures for {@code /metrics}, read from its limiter's stats.
 *
 * @param policy the policy's name
 * @param storeErrors calls to the shared store that failed
 * @param degradedDecisions decisions the failure policy answered
 * @param keysHeld keys held in this instance's memory
 * @param maximumKeys the most keys the policy may hold in memory
 * @param leased whether the policy is in fleet mode
 * @param lease the lease figures (all zero when not leased)
 */
record PolicyCounters(String policy, long storeErrors, long degradedDecisions, long keysHeld,
    long maximumKeys, boolean leased, LeaseStats lease) {

  static PolicyCounters of(String policy, LimiterStats s, long maximumKeys, boolean leased) {
    return new PolicyCounters(policy, s.storeErrors(), s.degradedDecisions(), s.keysHeld(),
        maximumKeys, leased, s.leases());
  }
}

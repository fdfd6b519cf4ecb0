package dev.sluice.console;

import dev.sluice.LimiterStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.quota.QuotaStore;
import java.util.List;
import java.util.Map;

/**
 * What the console shows, as the server that serves it knows it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-console">docs/server.md, "The console"</a>.
 */
public interface ConsoleSource {
  /** The instance the page reads (host and port, or an application's name). */
  String instance();

  /** The rate policies now in force, in order. */
  List<String> policies();

  /** A policy's decisions so far: {@code allowed}, {@code rejected} or {@code unavailable}. */
  long decisions(String policy, String outcome);

  /** A policy's limiter's figures (store errors, keys held, leases), or null. */
  LimiterStats stats(String policy);

  /** Whether a policy is in fleet mode (leases). */
  boolean leased(String policy);

  /** The keys a policy refused most, or null when it does not count them. */
  TopKeys refused(String policy);

  /** The concurrency limits, by name. */
  Map<String, ConcurrencyLimiter> limits();

  /** The keys of a limit whose limits the page shows (a bounded list). */
  List<String> keys(String limit);

  /** The keys a concurrency limit refused most, or null when it does not count them. */
  TopKeys refusedPermits(String limit);

  /** Where the quotas live, or null without quotas. */
  QuotaStore quotas();
}

package dev.sluice.spring;

import dev.sluice.RateLimiter;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import dev.sluice.spi.DecisionStore;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The application's limiters, one per policy under {@code sluice.policies}, on the shared store
 * when there is one (each policy's keys apart: {@code policy/key}). Inject it to limit work by
 * hand:
 *
 * <pre>{@code
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#everything-else">docs/spring.md, "Everything else"</a>.
 *
 * @Service
 * class Exports {
 *   private final RateLimiter exports;
 *
 *   Exports(SluiceLimiters limiters) {
 *     this.exports = limiters.get("exports");
 *   }
 * }
 * }</pre>
 */
public final class SluiceLimiters implements AutoCloseable {
  private final Map<String, RateLimiter> limiters;
  private final Map<String, ConcurrencyLimiter> concurrency;
  private final DecisionStore store;
  private final String storeName;
  private final AutoCloseable resources;
  final SluiceSettings settings;
  private final Quotas quotas;
  private final QuotaStore quotaStore;
  /** Per policy, the keys it refused most (with the console on); empty otherwise. */
  final Map<String, TopKeys> refused;

  SluiceLimiters(Map<String, RateLimiter> limiters, Map<String, ConcurrencyLimiter> concurrency,
      DecisionStore store, String storeName, AutoCloseable resources, SluiceSettings settings,
      Quotas quotas, QuotaStore quotaStore, Map<String, TopKeys> refused) {
    this.settings = settings;
    this.refused = Map.copyOf(refused);
    this.quotas = quotas;
    this.quotaStore = quotaStore;
    this.concurrency = Collections.unmodifiableMap(new LinkedHashMap<>(concurrency));
    this.limiters = Collections.unmodifiableMap(new LinkedHashMap<>(limiters));
    this.store = store;
    this.storeName = storeName;
    this.resources = resources;
  }

  /**
   * The limiter of a policy.
   *
   * @throws IllegalArgumentException naming the policies there are, if there is no such policy
   */
  public RateLimiter get(String policy) {
    RateLimiter l = limiters.get(policy);
    if (l == null) {
      throw new IllegalArgumentException("no Sluice policy '" + policy + "' (sluice.policies has "
          + new TreeSet<>(limiters.keySet()) + ")");
    }
    return l;
  }

  /**
   * The concurrency limiter named under {@code sluice.concurrency.limits}.
   *
   * @throws IllegalArgumentException naming the limits there are, if there is no such limit
   */
  public ConcurrencyLimiter concurrency(String name) {
    ConcurrencyLimiter l = concurrency.get(name);
    if (l == null) {
      throw new IllegalArgumentException("no Sluice concurrency limit '" + name
          + "' (sluice.concurrency.limits has " + new TreeSet<>(concurrency.keySet()) + ")");
    }
    return l;
  }

  /** Every concurrency limiter, by name. */
  public Map<String, ConcurrencyLimiter> allConcurrency() {
    return concurrency;
  }

  /** Every limiter, by policy. */
  public Map<String, RateLimiter> all() {
    return limiters;
  }

  /** The shared store, or empty for the in-memory store. */
  public Optional<DecisionStore> store() {
    return Optional.ofNullable(store);
  }

  /**
   * This instance's reading of the quotas ({@code sluice.quotas.enabled}), or empty when they
   * are off.
   */
  public Optional<Quotas> quotas() {
    return Optional.ofNullable(quotas);
  }

  /**
   * Where the quotas live (beside the counters in the shared store; memory otherwise): set and
   * remove them here, every instance reads the change within {@code sluice.quotas.refresh}.
   * Empty when quotas are off.
   */
  public Optional<QuotaStore> quotaStore() {
    return Optional.ofNullable(quotaStore);
  }

  /** {@code memory}, {@code redis} or {@code postgres}. */
  public String storeName() {
    return storeName;
  }

  /** Closes the limiters, then the store Sluice opened (never one the application gave it). */
  @Override
  public void close() {
    for (RateLimiter l : limiters.values()) {
      l.close();
    }
    for (ConcurrencyLimiter l : concurrency.values()) {
      l.close();
    }
    if (resources != null) {
      try {
        resources.close();
      } catch (Exception e) {
        throw new IllegalStateException("Sluice's store did not close: " + e, e);
      }
    }
  }
}

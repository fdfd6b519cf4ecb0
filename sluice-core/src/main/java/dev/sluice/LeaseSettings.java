package dev.sluice;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Fleet mode for a limiter on a shared store ({@link Sluice.Builder#leases}): an instance answers
 * a hot key from a lease of the shared bucket, taken in advance and spent locally, instead of
 * asking the store on every decision. Immutable; each {@code with...} returns a copy.
 *
 * <p>The figures that bound what the fleet can admit (see {@code docs/fleet.md}):
 * <ul>
 *   <li>{@link #lifetime()} L: a lease not spent within L of its last refill is given back.
 *   <li>{@link #excessShare()} s: the units one instance may hold at once are capped at
 *       {@code s × (the rate's units per second) / N}, and at {@code rate × L / N}, so that what
 *       all N instances hold together, which is the most the fleet can admit beyond an exact
 *       limiter in any window, stays within s of one second of the limit.
 *   <li>{@link #instances()} N: the number of instances sharing the limit.
 * </ul>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/fleet.md#settings">docs/fleet.md, "Settings"</a>.
 */
public final class LeaseSettings {
  private static final LeaseSettings DEFAULTS =
      new LeaseSettings(Duration.ofMillis(200), 0.01, 1, 10_000, null);

  private final Duration lifetime;
  private final double excessShare;
  private final int instances;
  private final int maximumKeys;
  private final String fleet;

  private LeaseSettings(Duration lifetime, double excessShare, int instances, int maximumKeys,
      String fleet) {
    this.lifetime = lifetime;
    this.excessShare = excessShare;
    this.instances = instances;
    this.maximumKeys = maximumKeys;
    this.fleet = fleet;
  }

  /** Lifetime 200 ms, excess share 1%, one instance, 10,000 keys. */
  public static LeaseSettings defaults() {
    return DEFAULTS;
  }

  /** How long a lease lasts after its last refill before what is left is given back (1 ms to 1 min). */
  public LeaseSettings withLifetime(Duration lifetime) {
    Objects.requireNonNull(lifetime, "lifetime");
    if (lifetime.compareTo(Duration.ofMillis(1)) < 0 || lifetime.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new IllegalArgumentException("lease lifetime must be between 1ms and 1m but was " + lifetime);
    }
    return new LeaseSettings(lifetime, excessShare, instances, maximumKeys, fleet);
  }

  /**
   * The most the whole fleet may admit beyond the limit in any window, as a share of one second
   * of the limit's rate, in (0, 1]: 0.01 lets 80,000/s admit at most 800 more than an exact
   * limiter would over any window. Smaller shares mean smaller leases and more store calls.
   */
  public LeaseSettings withExcessShare(double share) {
    if (!(share > 0 && share <= 1)) {
      throw new IllegalArgumentException("lease excessShare must be in (0, 1] but was " + share);
    }
    return new LeaseSettings(lifetime, share, instances, maximumKeys, fleet);
  }

  /**
   * The number of instances (limiters in separate processes) sharing the limit, at least 1 (the
   * default). Each instance's lease cap is its share of the bound; with
   * {@link StoreFailure#LOCAL_SHARE}, each decides at rate/N while the store is down. A store that
   * counts live instances (Redis, PostgreSQL) makes N the larger of this and its count; on a
   * store that cannot, saying fewer instances than run loosens the bound in proportion.
   */
  public LeaseSettings withInstances(int instances) {
    if (instances < 1) {
      throw new IllegalArgumentException("lease instances must be at least 1 but was " + instances);
    }
    return new LeaseSettings(lifetime, excessShare, instances, maximumKeys, fleet);
  }

  /**
   * The name under which the store counts the instances of this fleet (default: derived from the
   * limits, so that limiters with the same limits on the same store count together).
   */
  public LeaseSettings withFleet(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank() || name.length() > 200) {
      throw new IllegalArgumentException("lease fleet name must be 1 to 200 characters, not blank,"
          + " but was '" + name + "'");
    }
    return new LeaseSettings(lifetime, excessShare, instances, maximumKeys, name);
  }

  /**
   * The most keys an instance keeps lease records for (at least 1); keys beyond it are decided
   * with one store call each, as cold keys are.
   */
  public LeaseSettings withMaximumKeys(int keys) {
    if (keys < 1) {
      throw new IllegalArgumentException("lease maximumKeys must be at least 1 but was " + keys);
    }
    return new LeaseSettings(lifetime, excessShare, instances, keys, fleet);
  }

  /** The fleet's name, or null for one derived from the limits. */
  public String fleet() {
    return fleet;
  }

  public Duration lifetime() {
    return lifetime;
  }

  public double excessShare() {
    return excessShare;
  }

  public int instances() {
    return instances;
  }

  public int maximumKeys() {
    return maximumKeys;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LeaseSettings s && s.lifetime.equals(lifetime)
        && s.excessShare == excessShare && s.instances == instances && s.maximumKeys == maximumKeys
        && Objects.equals(s.fleet, fleet);
  }

  @Override
  public int hashCode() {
    return Objects.hash(lifetime, excessShare, instances, maximumKeys, fleet);
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "LeaseSettings[lifetime %s, excess share %s%%, %d instances,"
        + " %d keys]", Ticks.formatDuration(lifetime), Checks.format(excessShare * 100), instances,
        maximumKeys);
  }
}

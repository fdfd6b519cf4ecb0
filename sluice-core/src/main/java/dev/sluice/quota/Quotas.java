package dev.sluice.quota;

import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A store's quotas as the limiters read them: a snapshot in this JVM, read again when the store's
 * version moves ({@link #refresh}, or every {@code refreshEvery}), and kept as last known while
 * the store cannot be read. A lookup is a map read (the exact key) and one more per distinct
 * prefix length of the policy's prefix quotas; expired quotas are skipped.
 *
 * <pre>{@code
 * Quotas quotas = Quotas.of(store).refreshEvery(Duration.ofMillis(500));
 * RateLimiter api = quotas.rateLimiter("api", defaults,
 *     limits -> Sluice.builder().limits(limits.toArray(Limit[]::new)).build());
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 */
public final class Quotas implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Quotas.class.getName());

  /** One policy's quotas, indexed. */
  private record PolicyIndex(Map<String, Quota> exact, Map<String, Quota> prefixes,
      int[] prefixLengths) {}

  private record Index(long version, Map<String, PolicyIndex> policies) {
    static final Index EMPTY = new Index(-1, Map.of());
  }

  private final QuotaStore store;
  private final Supplier<Instant> clock;
  private volatile Index index = Index.EMPTY;
  private volatile Exception lastFailure;
  private ScheduledExecutorService refresher;

  private Quotas(QuotaStore store, Supplier<Instant> clock) {
    this.store = store;
    this.clock = clock;
  }

  /** The quotas of {@code store}, read once now; expiries judged on the system's clock. */
  public static Quotas of(QuotaStore store) {
    return of(store, Instant::now);
  }

  /** As {@link #of(QuotaStore)}, expiries judged on {@code clock}. */
  public static Quotas of(QuotaStore store, Supplier<Instant> clock) {
    Quotas q = new Quotas(Objects.requireNonNull(store, "store"),
        Objects.requireNonNull(clock, "clock"));
    q.refresh();
    return q;
  }

  /**
   * Reads the store again every {@code every} (on one daemon thread) when its version moved.
   *
   * @throws IllegalArgumentException unless 10 ms &lt;= every &lt;= 1 hour
   * @throws IllegalStateException if it refreshes already
   */
  public synchronized Quotas refreshEvery(Duration every) {
    Objects.requireNonNull(every, "every");
    if (every.compareTo(Duration.ofMillis(10)) < 0 || every.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("refreshEvery must be between 10ms and 1h but was "
          + every);
    }
    if (refresher != null) {
      throw new IllegalStateException("these quotas refresh already");
    }
    refresher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "sluice-quota-refresh");
      t.setDaemon(true);
      return t;
    });
    var unused = refresher.scheduleWithFixedDelay(this::refresh, every.toMillis(),
        every.toMillis(), TimeUnit.MILLISECONDS);
    return this;
  }

  /**
   * Reads the store's version, and its quotas when the version moved. A store that cannot be
   * read leaves the last quotas read in place ({@link #lastFailure}).
   *
   * @return whether the quotas changed
   */
  public boolean refresh() {
    try {
      long v = store.version();
      if (v == index.version) {
        lastFailure = null;
        return false;
      }
      QuotaStore.Snapshot s = store.read();
      index = build(s);
      lastFailure = null;
      return true;
    } catch (RuntimeException e) {
      if (lastFailure == null) {
        LOG.log(System.Logger.Level.WARNING, "quotas cannot be read; the last ones read apply: "
            + e);
      }
      lastFailure = e;
      return false;
    }
  }

  private static Index build(QuotaStore.Snapshot s) {
    Map<String, Map<String, Quota>> exact = new HashMap<>();
    Map<String, Map<String, Quota>> prefixes = new HashMap<>();
    for (Quota q : s.quotas()) {
      (q.prefix() ? prefixes : exact).computeIfAbsent(q.policy(), p -> new HashMap<>())
          .put(q.key(), q);
    }
    Map<String, PolicyIndex> policies = new HashMap<>();
    TreeSet<String> names = new TreeSet<>(exact.keySet());
    names.addAll(prefixes.keySet());
    for (String p : names) {
      Map<String, Quota> pre = prefixes.getOrDefault(p, Map.of());
      int[] lengths = pre.keySet().stream().mapToInt(String::length).distinct()
          .map(i -> -i).sorted().map(i -> -i).toArray();   // longest first
      policies.put(p, new PolicyIndex(Map.copyOf(exact.getOrDefault(p, Map.of())),
          Map.copyOf(pre), lengths));
    }
    return new Index(s.version(), Map.copyOf(policies));
  }

  /**
   * The quota of {@code key} of {@code policy} now: its exact one, else the longest prefix that
   * matches; an expired one is skipped (a shorter prefix may then apply). Null when none applies.
   */
  public Quota find(String policy, String key) {
    PolicyIndex p = index.policies.get(policy);
    if (p == null) {
      return null;
    }
    Instant now = clock.get();
    Quota q = p.exact.get(key);
    if (q != null && q.appliesAt(now)) {
      return q;
    }
    for (int length : p.prefixLengths) {
      if (length <= key.length()) {
        q = p.prefixes.get(key.substring(0, length));
        if (q != null && q.appliesAt(now)) {
          return q;
        }
      }
    }
    return null;
  }

  /** Every quota read, expired ones included. */
  public List<Quota> all() {
    List<Quota> out = new ArrayList<>();
    for (PolicyIndex p : index.policies.values()) {
      out.addAll(p.exact.values());
      out.addAll(p.prefixes.values());
    }
    return out;
  }

  /** The store's version the quotas are of (-1 before a first successful read). */
  public long version() {
    return index.version;
  }

  /** Why the last read failed; null when it succeeded. */
  public Exception lastFailure() {
    return lastFailure;
  }

  /**
   * The concurrency limit of {@code key} of the concurrency limit {@code limit}: its quota's, or
   * {@code otherwise} (a rate quota of that name does not apply).
   */
  public int concurrencyLimit(String limit, String key, int otherwise) {
    Quota q = find(limit, key);
    return q != null && q.isConcurrency() ? q.concurrency() : otherwise;
  }

  /**
   * A rate limiter for {@code policy} that decides each key by its quota's limits, else by
   * {@code defaults}. {@code build} makes a limiter for a quota's limits (the first time they are
   * met; at most {@value QuotaRateLimiter#MAX_LIMITERS} are kept, the least recently used closed
   * past that); its keys are the caller's, prefixed by a digest of the limits, so that limiters of
   * different limits never share a key's state on a shared store. A changed quota starts the key
   * afresh (its new limits' state), and a removed one returns it to the policy's.
   */
  public RateLimiter rateLimiter(String policy, RateLimiter defaults,
      Function<List<Limit>, RateLimiter> build) {
    return new QuotaRateLimiter(this, policy, Objects.requireNonNull(defaults, "defaults"),
        Objects.requireNonNull(build, "build"));
  }

  /** Stops refreshing. */
  @Override
  public synchronized void close() {
    if (refresher != null) {
      refresher.shutdownNow();
      refresher = null;
    }
  }
}

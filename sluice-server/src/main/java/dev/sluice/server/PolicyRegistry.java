package dev.sluice.server;

import dev.sluice.Algorithm;
import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.quota.Quotas;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.spi.DecisionStore;
import dev.sluice.internal.PrefixedStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The policies in force: loaded from the file (or the bundled sample), checked against the heap,
 * one limiter each, and reloaded when the file changes. A policy whose limits did not change
 * keeps its limiter, and so its state. Thread-safe: requests read the current map, a reload
 * replaces it whole.
 */
final class PolicyRegistry {
  private static final System.Logger LOG = System.getLogger(PolicyRegistry.class.getName());
  private static final String SAMPLE = "/dev/sluice/server/sample.yaml";
  static final long BASE_HEAP_BYTES = 96L << 20;

  /** One policy as the service runs it. */
  record Policy(String name, List<Limit> limits, long maximumKeys, RateLimiter limiter,
      boolean leased, String groupSpec) {}

  private final Options options;
  private final DecisionStore store;
  private final StoreFailure storeFailure;
  private final CircuitBreakerSettings breaker;
  private final Metrics metrics;
  /** The quotas a policy's keys may have (the admin API's); null: none. */
  private final Quotas quotas;
  private volatile Map<String, Policy> policies;
  /** The policies file's {@code envoy:} section now in force, or null. */
  private volatile EnvoyConfig envoySection;
  /** Run after every successful reload (the server re-merges the Envoy configuration). */
  private volatile Runnable onReload = () -> { };
  private volatile long configStamp;

  PolicyRegistry(Options options, DecisionStore store, StoreFailure storeFailure,
      CircuitBreakerSettings breaker, Metrics metrics, Policies initial, Quotas quotas) {
    this.options = options;
    this.quotas = quotas;
    this.store = store;
    this.storeFailure = storeFailure;
    this.breaker = breaker;
    this.metrics = metrics;
    this.configStamp = stamp();
    this.policies = build(initial, Map.of());
    this.envoySection = initial.envoy();
  }

  /** The policies file's {@code envoy:} section now in force, or null. */
  EnvoyConfig envoySection() {
    return envoySection;
  }

  void onReload(Runnable r) {
    this.onReload = r;
  }

  /** Where the policies come from: the file, or the bundled sample. */
  static String source(Options options) {
    return options.configFile != null ? options.configFile.toString() : "the bundled sample config";
  }

  /** The policy of this name, or null. */
  Policy get(String name) {
    return policies.get(name);
  }

  /** The policy names now in force, in the file's order. */
  List<String> names() {
    return List.copyOf(policies.keySet());
  }

  /** Each policy's store and lease figures, for {@code /metrics}. */
  List<PolicyCounters> counters() {
    List<PolicyCounters> out = new ArrayList<>();
    for (Policy p : all()) {
      out.add(PolicyCounters.of(p.name(), p.limiter().stats(), p.maximumKeys(), p.leased()));
    }
    return out;
  }

  Collection<Policy> all() {
    return policies.values();
  }

  /** The policies file, or the bundled sample, validated for the options' store. */
  static Policies load(Options options) throws ConfigException {
    long tps = SharedStore.ticksPerSecond(options);
    if (options.configFile != null) {
      return Policies.load(options.configFile, tps);
    }
    try (InputStream in = PolicyRegistry.class.getResourceAsStream(SAMPLE)) {
      return Policies.parse("sample.yaml", new String(in.readAllBytes(), StandardCharsets.UTF_8), tps);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The command line's failure policy, else the file's, else fail closed. */
  static StoreFailure storeFailure(Options options, Policies policies) {
    return options.storeFailure != null ? options.storeFailure
        : policies.store().failure() != null ? policies.store().failure() : StoreFailure.FAIL_CLOSED;
  }

  /**
   * The heap needed to hold every policy's {@code maximumKeys} keys of up to
   * {@code maxKeyLength} characters, with room for the collector: per key, the map entry and
   * state (about 100 bytes plus 40 per state slot) and the key string (48 + 2 per character),
   * times 1.5, plus 96 MiB for the rest; a group also holds up to as many parents (one slot each).
   * Keys kept in a shared store count only when the policy
   * falls back to memory.
   */
  static long heapBytesNeeded(Policies policies, Options options) {
    long total = BASE_HEAP_BYTES;
    if (SharedStore.ticksPerSecond(options) != 1_000_000_000L
        && storeFailure(options, policies) != StoreFailure.FALLBACK_IN_MEMORY) {
      return total;
    }
    for (Map.Entry<String, List<Limit>> e : policies.all().entrySet()) {
      Long own = policies.maximumKeys(e.getKey());
      long keys = own != null ? own : options.maximumKeys;
      int slots = 0;
      for (Limit l : e.getValue()) {
        slots += l.algorithm().isBucket() ? 1 : l.algorithm() == Algorithm.FIXED_WINDOW ? 3 : 4;
      }
      boolean group = policies.group(e.getKey()) != null;
      if (group) {
        slots -= 1;   // the parent is not the key's: a group holds up to as many parents, of one slot
        total += keys * (100 + 40L + 48 + 2L * options.maxKeyLength) * 3 / 2;
      }
      long perKey = 100 + 40L * slots + 48 + 2L * options.maxKeyLength;
      total += keys * perKey * 3 / 2;
    }
    return total;
  }

  /** Refuses policies whose keys may not fit in this JVM's heap. */
  static void checkHeap(Policies p, Options options) throws ConfigException {
    long needed = heapBytesNeeded(p, options);
    long max = Runtime.getRuntime().maxMemory();
    if (max != Long.MAX_VALUE && needed > max) {
      throw new ConfigException(List.of(source(options) + ": the policies may hold keys needing about "
          + (needed >> 20) + " MiB of heap but this JVM has " + (max >> 20) + " MiB: lower"
          + " maximumKeys (--maximum-keys, or per policy) or give the JVM more (-Xmx; ./sluice serve"
          + " sizes it from the policies)"));
    }
  }

  private long stamp() {
    if (options.configFile == null) {
      return 0;
    }
    try {
      return Files.getLastModifiedTime(options.configFile).toMillis() * 31 + Files.size(options.configFile);
    } catch (IOException e) {
      return -1;
    }
  }

  /** Limiters for new policies; a policy whose limits did not change keeps its limiter (and state). */
  // ReferenceEquality: a policy kept is the same object; an equal one rebuilt replaces it and the old limiter closes
  @SuppressWarnings("ReferenceEquality")
  private Map<String, Policy> build(Policies p, Map<String, Policy> old) {
    Map<String, Policy> out = new LinkedHashMap<>();
    for (Map.Entry<String, List<Limit>> e : p.all().entrySet()) {
      Long own = p.maximumKeys(e.getKey());
      long keys = own != null ? own : options.maximumKeys;
      Policy before = old.get(e.getKey());
      Policies.GroupPolicy group = p.group(e.getKey());
      String spec = group == null ? null : group.spec();
      if (before != null && before.limits().equals(e.getValue()) && before.maximumKeys() == keys
          && Objects.equals(before.groupSpec(), spec)) {
        out.put(e.getKey(), before);
        continue;
      }
      RateLimiter limiter = null;
      if (group != null) {
        StoreFailure failure = storeFailure == StoreFailure.LOCAL_SHARE ? StoreFailure.FAIL_CLOSED
            : storeFailure;
        if (store != null && options.leases != null) {
          LOG.log(System.Logger.Level.INFO, "policy {0} is a group and is decided with one store"
              + " call per decision (a group does not lease)", e.getKey());
        }
        limiter = builder(e.getKey(), List.of(), keys, failure).group(group.group()).build();
        out.put(e.getKey(), new Policy(e.getKey(), e.getValue(), keys, limiter, false, spec));
        continue;
      }
      if (store != null && options.leases != null) {
        try {
          limiter = builder(e.getKey(), e.getValue(), keys, storeFailure).leases(options.leases)
              .build();
        } catch (IllegalStateException | IllegalArgumentException refused) {
          LOG.log(System.Logger.Level.WARNING, "policy {0} cannot lease and is decided with one"
              + " store call per decision: {1}", e.getKey(), refused.getMessage());
        }
      }
      boolean leased = limiter != null;
      StoreFailure failure = storeFailure == StoreFailure.LOCAL_SHARE ? StoreFailure.FAIL_CLOSED
          : storeFailure;
      if (limiter == null) {
        limiter = builder(e.getKey(), e.getValue(), keys, failure).build();
      }
      if (quotas != null) {   // a key's quota replaces the policy's limits (its own state)
        String name = e.getKey();
        limiter = quotas.rateLimiter(name, limiter,
            limits -> builder(name + "#quota", limits, keys, failure).build());
      }
      out.put(e.getKey(), new Policy(e.getKey(), e.getValue(), keys, limiter, leased, null));
    }
    for (Policy gone : old.values()) {
      if (out.get(gone.name()) != gone) {
        gone.limiter().close();   // replaced: give back what it holds
      }
    }
    return Collections.unmodifiableMap(out);
  }

  private Sluice.Builder builder(String name, List<Limit> limits, long keys, StoreFailure failure) {
    Sluice.Builder b = Sluice.builder().limits(limits.toArray(new Limit[0]));
    if (store == null || failure == StoreFailure.FALLBACK_IN_MEMORY) {
      b.maximumKeys(keys);
    }
    if (store != null) {
      b.store(new PrefixedStore(store, name)).onStoreFailure(failure).circuitBreaker(breaker);
    }
    return b;
  }

  /**
   * A limiter for limits that are not a file policy (an Envoy descriptor's), on the same store,
   * failure policy and breaker as the policies, its keys under {@code name}.
   */
  RateLimiter limiter(String name, List<Limit> limits, long keys) {
    StoreFailure failure = storeFailure == StoreFailure.LOCAL_SHARE ? StoreFailure.FAIL_CLOSED
        : storeFailure;
    return builder(name, limits, keys, failure).build();
  }

  /** Closes every limiter: leases are given back. */
  void closeAll() {
    for (Policy p : policies.values()) {
      p.limiter().close();
    }
  }

  /**
   * Reads the file again now; on success the new policies apply to the next request, on failure
   * the old ones stay, the failure is counted and the problems are thrown. The {@code store:}
   * section is read at start only.
   */
  void reload() throws ConfigException {
    try {
      Policies p = load(options);
      checkHeap(p, options);
      policies = build(p, policies);
      envoySection = p.envoy();
      onReload.run();
    } catch (ConfigException e) {
      metrics.reloadsFailed.increment();
      throw e;
    } catch (RuntimeException e) {
      metrics.reloadsFailed.increment();
      throw new ConfigException(List.of(source(options) + ": " + e.getMessage()));
    }
    metrics.reloadsOk.increment();
  }

  void reloadIfChanged() {
    long s = stamp();
    if (s == configStamp) {
      return;
    }
    configStamp = s;
    try {
      reload();
      LOG.log(System.Logger.Level.INFO, "reloaded {0}: policies {1}", options.configFile,
          policies.keySet());
    } catch (ConfigException e) {
      LOG.log(System.Logger.Level.WARNING, "{0} not reloaded, the previous policies stay: {1}",
          options.configFile, String.join("; ", e.problems()));
    }
  }
}

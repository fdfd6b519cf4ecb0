package dev.sluice.console;

import dev.sluice.LeaseStats;
import dev.sluice.LimiterStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencyStats;
import dev.sluice.internal.QuotaFields;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The console's document, with its history: {@link #sample()} (once a second, by the server's
 * scheduler) keeps each policy's decisions per second, each concurrency limit's permits in flight,
 * acquisitions and refusals per second, and the limits of its keys, {@link #SAMPLES} deep; {@link
 * #document()} is everything the page shows, as JSON-ready maps and lists. Its size depends on the
 * configuration (policies, limits, their listed keys), never on the traffic.
 *
 * <p>The document: {@code instance}, {@code at}, {@code times} (each sample's epoch
 * milliseconds; every series ends at the last), {@code policies} (name, decisions so far,
 * {@code allowedPerSecond}, {@code refusedPerSecond}, store figures, {@code leased} and a {@code
 * lease}'s figures, {@code topRefused}), {@code limits} (name, in flight, waiting, acquired,
 * refused, their series, {@code keys} with each key's {@code limit} and {@code limitHistory},
 * {@code topRefused}), {@code version}, {@code quotas} and {@code audit}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-console">docs/server.md, "The console"</a>.
 */
public final class ConsoleHistory {
  /** Samples kept: five minutes at one a second. */
  public static final int SAMPLES = 300;
  /** Keys refused most given per policy and limit. */
  public static final int TOP = 10;
  /** Audit entries given. */
  public static final int AUDIT = 20;

  private final ConsoleSource source;
  private final LongSupplier epochMillis;
  private final Ring times = new Ring();
  private final Map<String, PolicySeries> policies = new LinkedHashMap<>();
  private final Map<String, LimitSeries> limits = new LinkedHashMap<>();

  /**
   * A history of {@code source}, timed by {@code epochMillis} (the wall clock; a test's own).
   */
  public ConsoleHistory(ConsoleSource source, LongSupplier epochMillis) {
    this.source = Objects.requireNonNull(source, "source");
    this.epochMillis = Objects.requireNonNull(epochMillis, "epochMillis");
  }

  /** Takes one sample of every series. */
  public synchronized void sample() {
    long now = epochMillis.getAsLong();
    double seconds = times.size() == 0 ? 1 : Math.max(1e-3, (now - (long) times.last()) / 1e3);
    times.add(now);
    Set<String> seen = new HashSet<>();
    for (String name : source.policies()) {
      seen.add(name);
      policies.computeIfAbsent(name, n -> new PolicySeries()).sample(
          source.decisions(name, "allowed"), source.decisions(name, "rejected")
              + source.decisions(name, "unavailable"), seconds);
    }
    policies.keySet().retainAll(seen);
    limits.keySet().retainAll(source.limits().keySet());
    source.limits().forEach((name, l) -> limits.computeIfAbsent(name, n -> new LimitSeries())
        .sample(l, source.keys(name), seconds));
  }

  /** Everything the page shows. */
  public Map<String, Object> document() {
    QuotaStore store = source.quotas();
    QuotaStore.Snapshot current = store == null ? null : store.read();
    List<QuotaChange> audit = store == null ? List.of() : store.audit(AUDIT);
    Map<String, Object> d = new LinkedHashMap<>();
    synchronized (this) {
      d.put("instance", source.instance());
      d.put("at", Instant.ofEpochMilli(epochMillis.getAsLong()).toString());
      List<Long> t = new ArrayList<>(times.size());
      for (int i = 0; i < times.size(); i++) {
        t.add((long) times.get(i));
      }
      d.put("times", t);
      List<Object> ps = new ArrayList<>();
      for (String name : source.policies()) {
        ps.add(policy(name, policies.get(name)));
      }
      d.put("policies", ps);
      List<Object> ls = new ArrayList<>();
      source.limits().forEach((name, l) -> ls.add(limit(name, l, limits.get(name))));
      d.put("limits", ls);
    }
    d.put("quotasOn", store != null);
    d.put("version", current == null ? 0 : current.version());
    List<Object> qs = new ArrayList<>();
    if (current != null) {
      for (Quota q : current.quotas()) {
        qs.add(QuotaFields.toMap(q));
      }
    }
    d.put("quotas", qs);
    List<Object> as = new ArrayList<>();
    for (QuotaChange c : audit) {
      as.add(QuotaFields.toMap(c));
    }
    d.put("audit", as);
    return d;
  }

  private Map<String, Object> policy(String name, PolicySeries s) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("name", name);
    p.put("allowed", source.decisions(name, "allowed"));
    p.put("rejected", source.decisions(name, "rejected"));
    p.put("unavailable", source.decisions(name, "unavailable"));
    p.put("allowedPerSecond", series(s == null ? null : s.allowed));
    p.put("refusedPerSecond", series(s == null ? null : s.refused));
    LimiterStats st = source.stats(name);
    if (st != null) {
      p.put("storeErrors", st.storeErrors());
      p.put("degradedDecisions", st.degradedDecisions());
      p.put("keysHeld", st.keysHeld());
    }
    boolean leased = source.leased(name);
    p.put("leased", leased);
    if (leased && st != null) {
      LeaseStats l = st.leases();
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("instances", l.instances());
      m.put("keysLeased", l.keysLeased());
      m.put("unitsHeld", l.unitsHeld());
      m.put("unitsGranted", l.unitsGranted());
      m.put("unitsSpent", l.unitsSpent());
      m.put("unitsReturned", l.unitsReturned());
      m.put("unitsStranded", l.unitsStranded());
      m.put("localRejections", l.localRejections());
      m.put("leaseCalls", l.leaseCalls());
      m.put("meanLeaseCallMillis", l.meanLeaseCallNanos() / 1e6);
      p.put("lease", m);
    }
    p.put("topRefused", top(source.refused(name)));
    return p;
  }

  private Map<String, Object> limit(String name, ConcurrencyLimiter l, LimitSeries s) {
    ConcurrencyStats st = l.stats();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", name);
    m.put("inFlight", st.inFlight());
    m.put("waiting", st.waiting());
    m.put("acquired", st.acquired());
    m.put("refused", st.refused());
    m.put("circuitOpen", st.circuitOpen());
    m.put("inFlightHistory", series(s == null ? null : s.inFlight));
    m.put("acquiredPerSecond", series(s == null ? null : s.acquired));
    m.put("refusedPerSecond", series(s == null ? null : s.refused));
    List<Object> keys = new ArrayList<>();
    for (String key : source.keys(name)) {
      AdaptiveLimit a = l.adaptiveLimit(key);
      Map<String, Object> k = new LinkedHashMap<>();
      k.put("key", key);
      k.put("limit", l.limit(key));
      k.put("adaptive", a != null);
      k.put("limitHistory", series(s == null ? null : s.keys.get(key)));
      keys.add(k);
    }
    m.put("keys", keys);
    m.put("topRefused", top(source.refusedPermits(name)));
    return m;
  }

  /** A series' values, the last of them taken at the last of the document's sample times. */
  private static List<Double> series(Ring r) {
    List<Double> out = new ArrayList<>();
    if (r != null) {
      for (int i = 0; i < r.size(); i++) {
        out.add(Math.round(r.get(i) * 100) / 100.0);
      }
    }
    return out;
  }

  private static List<Object> top(TopKeys sketch) {
    List<Object> out = new ArrayList<>();
    if (sketch != null) {
      for (TopKeys.Entry e : sketch.top(TOP)) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", e.key());
        m.put("count", Math.round(e.count() * 10) / 10.0);
        out.add(m);
      }
    }
    return out;
  }

  /** A policy's decisions per second. */
  private static final class PolicySeries {
    final Ring allowed = new Ring();
    final Ring refused = new Ring();
    private long lastAllowed = -1;
    private long lastRefused;

    void sample(long allowedTotal, long refusedTotal, double seconds) {
      allowed.add(lastAllowed < 0 ? 0 : (allowedTotal - lastAllowed) / seconds);
      refused.add(lastAllowed < 0 ? 0 : (refusedTotal - lastRefused) / seconds);
      lastAllowed = allowedTotal;
      lastRefused = refusedTotal;
    }
  }

  /** A concurrency limit's in flight, acquisitions and refusals, and its keys' limits. */
  private static final class LimitSeries {
    final Ring inFlight = new Ring();
    final Ring acquired = new Ring();
    final Ring refused = new Ring();
    final Map<String, Ring> keys = new LinkedHashMap<>();
    private long lastAcquired = -1;
    private long lastRefused;

    void sample(ConcurrencyLimiter l, List<String> listed, double seconds) {
      ConcurrencyStats st = l.stats();
      inFlight.add(st.inFlight());
      acquired.add(lastAcquired < 0 ? 0 : (st.acquired() - lastAcquired) / seconds);
      refused.add(lastAcquired < 0 ? 0 : (st.refused() - lastRefused) / seconds);
      lastAcquired = st.acquired();
      lastRefused = st.refused();
      keys.keySet().retainAll(listed);
      for (String key : listed) {
        keys.computeIfAbsent(key, k -> new Ring()).add(l.limit(key));
      }
    }
  }

  /** The last {@link #SAMPLES} values of a series, oldest first. */
  static final class Ring {
    private final double[] values = new double[SAMPLES];
    private int next;
    private int size;

    void add(double v) {
      values[next] = v;
      next = (next + 1) % SAMPLES;
      if (size < SAMPLES) {
        size++;
      }
    }

    int size() {
      return size;
    }

    double get(int i) {
      return values[(next - size + i + SAMPLES) % SAMPLES];
    }

    double last() {
      return get(size - 1);
    }
  }
}

package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.sluice.LeaseStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencyStats;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;

/**
 * The console (docs/server.md, "The console"): a page at {@code /console} whose assets ship in
 * the jar, and {@code GET /v1/console}, one JSON document with everything the page shows: each
 * policy's decisions per second, each concurrency limit's in flight and the limits of its keys
 * (an adaptive limit's history), the fleet's leases, the keys refused most, the quotas and their
 * audit trail. The page is static and holds no data; the document is behind the admin token (the
 * Router checks it), as the quotas the page changes are.
 *
 * <p>History is sampled here, once a second, {@link #SAMPLES} samples deep: a page opened now
 * shows the last minutes at once. Its size is bounded by the configuration (policies, limits,
 * {@link PermitEndpoint#METERED_KEYS} keys per limit), never by the traffic.
 */
final class Console {
  /** Samples kept: five minutes at one a second. */
  static final int SAMPLES = 300;
  /** Keys refused most given per policy and limit. */
  static final int TOP = 10;
  /** Audit entries given. */
  static final int AUDIT = 20;
  /** What the page may load and run: its own assets, its own API, nothing inline. */
  static final String CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self';"
      + " style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none';"
      + " form-action 'none'; frame-ancestors 'none'";
  private static final Map<String, String> ASSETS = Map.of(
      "/console", "index.html",
      "/console/", "index.html",
      "/console/console.js", "console.js",
      "/console/console.css", "console.css",
      "/console/favicon.svg", "favicon.svg");

  private final Metrics metrics;
  private final PolicyRegistry registry;
  private final Map<String, ConcurrencyLimiter> limiters;
  private final PermitEndpoint permits;
  private final QuotaStore quotas;
  private final Responses responses;
  private final LongSupplier epochMillis;
  private final Supplier<String> instance;
  private final Map<String, byte[]> assets = new LinkedHashMap<>();

  /** Sample times, epoch milliseconds; the series below are aligned with it. */
  private final Ring times = new Ring();
  private final Map<String, PolicySeries> policies = new LinkedHashMap<>();
  private final Map<String, LimitSeries> limits = new LinkedHashMap<>();

  Console(Metrics metrics, PolicyRegistry registry, Map<String, ConcurrencyLimiter> limiters,
      PermitEndpoint permits, QuotaStore quotas, Responses responses, Supplier<String> instance,
      LongSupplier epochMillis) {
    this.metrics = metrics;
    this.registry = registry;
    this.limiters = limiters;
    this.permits = permits;
    this.quotas = quotas;
    this.responses = responses;
    this.instance = instance;
    this.epochMillis = epochMillis;
    for (String name : new HashSet<>(ASSETS.values())) {
      try (InputStream in = Console.class.getResourceAsStream("console/" + name)) {
        if (in == null) {
          throw new IllegalStateException("the console's asset " + name + " is missing from"
              + " the jar");
        }
        assets.put(name, in.readAllBytes());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** True when {@code path} is one of the page's assets. */
  static boolean isAsset(String path) {
    return ASSETS.containsKey(path);
  }

  /** Sends one of the page's assets, with headers that keep it to itself. */
  void asset(Exchange x, String path) {
    String name = ASSETS.get(path);
    String type = name.endsWith(".html") ? "text/html; charset=utf-8"
        : name.endsWith(".js") ? "text/javascript; charset=utf-8"
        : name.endsWith(".svg") ? "image/svg+xml" : "text/css; charset=utf-8";
    if (x.claim()) {
      x.response.getHeaders().put("Content-Security-Policy", CONTENT_SECURITY_POLICY);
      x.response.getHeaders().put("X-Content-Type-Options", "nosniff");
      x.response.getHeaders().put("Referrer-Policy", "no-referrer");
      x.response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
      responses.send(x, 200, type, assets.get(name));
    }
  }

  /** Takes one sample of every series (the service's scheduler calls it once a second). */
  synchronized void sample() {
    long now = epochMillis.getAsLong();
    long previous = times.size() == 0 ? now : times.last();
    double seconds = Math.max(1e-3, (now - previous) / 1e3);
    times.add(now);
    Set<String> seen = new HashSet<>();
    for (String name : registry.names()) {
      seen.add(name);
      PolicySeries s = policies.computeIfAbsent(name, n -> new PolicySeries());
      s.sample(metrics.decisions(name, "allowed"), metrics.decisions(name, "rejected")
          + metrics.decisions(name, "unavailable"), seconds);
    }
    policies.keySet().retainAll(seen);
    limiters.forEach((name, l) -> {
      LimitSeries s = limits.computeIfAbsent(name, n -> new LimitSeries());
      s.sample(l, permits.meteredKeys(name), seconds);
    });
  }

  /** {@code GET /v1/console}: everything the page shows, as one JSON document. */
  void snapshot(Exchange x) {
    List<QuotaChange> audit = quotas.audit(AUDIT);
    QuotaStore.Snapshot current = quotas.read();
    Map<String, PolicyCounters> counters = new LinkedHashMap<>();
    for (PolicyCounters c : registry.counters()) {
      counters.put(c.policy(), c);
    }
    responses.json(x, 200, "application/json", g -> {
      synchronized (this) {
        g.writeStartObject();
        g.writeStringField("instance", instance.get());
        g.writeStringField("at", Instant.ofEpochMilli(epochMillis.getAsLong()).toString());
        g.writeArrayFieldStart("times");   // epoch ms of each sample; series end at the last
        for (int i = 0; i < times.size(); i++) {
          g.writeNumber((long) times.get(i));
        }
        g.writeEndArray();
        g.writeArrayFieldStart("policies");
        for (String name : registry.names()) {
          policy(g, name, counters.get(name), policies.get(name));
        }
        g.writeEndArray();
        g.writeArrayFieldStart("limits");
        for (Map.Entry<String, ConcurrencyLimiter> e : limiters.entrySet()) {
          limit(g, e.getKey(), e.getValue(), limits.get(e.getKey()));
        }
        g.writeEndArray();
        g.writeNumberField("version", current.version());
        g.writeArrayFieldStart("quotas");
        for (var q : current.quotas()) {
          QuotaEndpoint.write(g, q);
        }
        g.writeEndArray();
        g.writeArrayFieldStart("audit");
        for (QuotaChange c : audit) {
          QuotaEndpoint.write(g, c);
        }
        g.writeEndArray();
        g.writeEndObject();
      }
    });
  }

  private void policy(JsonGenerator g, String name, PolicyCounters c, PolicySeries s)
      throws IOException {
    g.writeStartObject();
    g.writeStringField("name", name);
    g.writeNumberField("allowed", metrics.decisions(name, "allowed"));
    g.writeNumberField("rejected", metrics.decisions(name, "rejected"));
    g.writeNumberField("unavailable", metrics.decisions(name, "unavailable"));
    series(g, "allowedPerSecond", s == null ? null : s.allowed);
    series(g, "refusedPerSecond", s == null ? null : s.refused);
    if (c != null) {
      g.writeNumberField("storeErrors", c.storeErrors());
      g.writeNumberField("degradedDecisions", c.degradedDecisions());
      g.writeNumberField("keysHeld", c.keysHeld());
      g.writeBooleanField("leased", c.leased());
      if (c.leased()) {
        LeaseStats l = c.lease();
        g.writeObjectFieldStart("lease");
        g.writeNumberField("instances", l.instances());
        g.writeNumberField("keysLeased", l.keysLeased());
        g.writeNumberField("unitsHeld", l.unitsHeld());
        g.writeNumberField("unitsGranted", l.unitsGranted());
        g.writeNumberField("unitsSpent", l.unitsSpent());
        g.writeNumberField("unitsReturned", l.unitsReturned());
        g.writeNumberField("unitsStranded", l.unitsStranded());
        g.writeNumberField("localRejections", l.localRejections());
        g.writeNumberField("leaseCalls", l.leaseCalls());
        g.writeNumberField("meanLeaseCallMillis", l.meanLeaseCallNanos() / 1e6);
        g.writeEndObject();
      }
    }
    top(g, metrics.topRefused(name, false));
    g.writeEndObject();
  }

  private void limit(JsonGenerator g, String name, ConcurrencyLimiter l, LimitSeries s)
      throws IOException {
    ConcurrencyStats st = l.stats();
    g.writeStartObject();
    g.writeStringField("name", name);
    g.writeNumberField("inFlight", st.inFlight());
    g.writeNumberField("waiting", st.waiting());
    g.writeNumberField("acquired", st.acquired());
    g.writeNumberField("refused", st.refused());
    g.writeBooleanField("circuitOpen", st.circuitOpen());
    series(g, "inFlightHistory", s == null ? null : s.inFlight);
    series(g, "acquiredPerSecond", s == null ? null : s.acquired);
    series(g, "refusedPerSecond", s == null ? null : s.refused);
    g.writeArrayFieldStart("keys");
    for (String key : permits.meteredKeys(name)) {
      AdaptiveLimit a = l.adaptiveLimit(key);
      g.writeStartObject();
      g.writeStringField("key", key);
      g.writeNumberField("limit", l.limit(key));
      g.writeBooleanField("adaptive", a != null);
      series(g, "limitHistory", s == null ? null : s.keys.get(key));
      g.writeEndObject();
    }
    g.writeEndArray();
    top(g, metrics.topRefused(name, true));
    g.writeEndObject();
  }

  /** A series' values, the last of them taken at the last of the document's sample times. */
  private static void series(JsonGenerator g, String field, Ring r) throws IOException {
    g.writeArrayFieldStart(field);
    if (r != null) {
      for (int i = 0; i < r.size(); i++) {
        g.writeNumber(Math.round(r.get(i) * 100) / 100.0);
      }
    }
    g.writeEndArray();
  }

  private static void top(JsonGenerator g, TopKeys sketch) throws IOException {
    g.writeArrayFieldStart("topRefused");
    if (sketch != null) {
      for (TopKeys.Entry e : sketch.top(TOP)) {
        g.writeStartObject();
        g.writeStringField("key", e.key());
        g.writeNumberField("count", Math.round(e.count() * 10) / 10.0);
        g.writeEndObject();
      }
    }
    g.writeEndArray();
  }

  /** A policy's decisions per second. */
  private static final class PolicySeries {
    final Ring allowed = new Ring();
    final Ring refused = new Ring();
    private long lastAllowed = -1;
    private long lastRefused;

    void sample(long allowedTotal, long refusedTotal, double seconds) {
      if (lastAllowed >= 0) {
        allowed.add((allowedTotal - lastAllowed) / seconds);
        refused.add((refusedTotal - lastRefused) / seconds);
      } else {
        allowed.add(0);
        refused.add(0);
      }
      lastAllowed = allowedTotal;
      lastRefused = refusedTotal;
    }
  }

  /** A concurrency limit's in flight, acquisitions and refusals, and its metered keys' limits. */
  private static final class LimitSeries {
    final Ring inFlight = new Ring();
    final Ring acquired = new Ring();
    final Ring refused = new Ring();
    final Map<String, Ring> keys = new LinkedHashMap<>();
    private long lastAcquired = -1;
    private long lastRefused;

    void sample(ConcurrencyLimiter l, List<String> metered, double seconds) {
      ConcurrencyStats st = l.stats();
      inFlight.add(st.inFlight());
      if (lastAcquired >= 0) {
        acquired.add((st.acquired() - lastAcquired) / seconds);
        refused.add((st.refused() - lastRefused) / seconds);
      } else {
        acquired.add(0);
        refused.add(0);
      }
      lastAcquired = st.acquired();
      lastRefused = st.refused();
      keys.keySet().retainAll(metered);
      for (String key : metered) {
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

    long last() {
      return (long) get(size - 1);
    }
  }
}

package dev.sluice.server;

import dev.sluice.TopKeys;
import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencyStats;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToDoubleBiFunction;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/** The service's counters, written out in the Prometheus text format (0.0.4). */
final class Metrics {
  /** Upper bounds of the latency histogram, in seconds. */
  private static final double[] BOUNDS = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};

  private final ConcurrentHashMap<String, LongAdder> decisions = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Integer, LongAdder> responses = new ConcurrentHashMap<>();
  private final LongAdder[] buckets = new LongAdder[BOUNDS.length + 1];
  private final LongAdder latencySum = new LongAdder();   // nanoseconds
  private final LongAdder latencyCount = new LongAdder();
  private final ConcurrentHashMap<String, LongAdder> envoy = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, LongAdder> envoyDetailed = new ConcurrentHashMap<>();
  /** Envoy requests that were not a valid {@code RateLimitRequest} (refused, not decided). */
  final LongAdder envoyMalformed = new LongAdder();
  /** The keys refused most, by policy (rate) and by concurrency limit: bounded sketches. */
  private final ConcurrentHashMap<String, TopKeys> refusedByPolicy = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, TopKeys> refusedByLimit = new ConcurrentHashMap<>();
  /** Keys each sketch holds. */
  static final int TOP_KEYS = 256;
  /** How long a refusal counts: it decays by e every this long. */
  static final Duration TOP_MEMORY = Duration.ofMinutes(5);
  final LongAdder reloadsOk = new LongAdder();
  final LongAdder reloadsFailed = new LongAdder();

  /** Told of each counter of decisions or responses as it is made: name, label pairs, adder. */
  @FunctionalInterface
  interface CounterListener {
    void created(String name, List<String> labels, LongAdder adder);
  }

  private volatile CounterListener listener;

  /** Tells {@code l} of every counter of decisions or responses, those made so far first. */
  void onNewCounter(CounterListener l) {
    this.listener = l;
    decisions.forEach((k, a) -> {
      String[] parts = k.split("\u0000", 2);
      l.created("sluice.decisions", List.of("policy", parts[0], "outcome", parts[1]), a);
    });
    responses.forEach((code, a) -> l.created("sluice.http.responses",
        List.of("code", Integer.toString(code)), a));
  }

  private LongAdder made(String name, List<String> labels) {
    LongAdder a = new LongAdder();
    CounterListener l = listener;
    if (l != null) {
      l.created(name, labels, a);
    }
    return a;
  }

  Metrics() {
    for (int i = 0; i < buckets.length; i++) {
      buckets[i] = new LongAdder();
    }
  }

  /** A key a policy refused (the policies are the configuration's: a bounded set). */
  void refused(String policy, String key) {
    refusedByPolicy.computeIfAbsent(policy, p -> TopKeys.of(TOP_KEYS, TOP_MEMORY)).add(key);
  }

  /** A key a concurrency limit refused a permit. */
  void refusedPermit(String limit, String key) {
    refusedByLimit.computeIfAbsent(limit, l -> TopKeys.of(TOP_KEYS, TOP_MEMORY)).add(key);
  }

  /** The sketch of a policy's (or, with {@code permits}, a limit's) refusals; null if none yet. */
  TopKeys topRefused(String name, boolean permits) {
    return (permits ? refusedByLimit : refusedByPolicy).get(name);
  }

  /** Decisions a policy made with this outcome (allowed, rejected, unavailable) so far. */
  long decisions(String policy, String outcome) {
    LongAdder a = decisions.get(policy + '\u0000' + outcome);
    return a == null ? 0 : a.sum();
  }

  void decision(String policy, String outcome, long nanos) {
    decisions.computeIfAbsent(policy + '\u0000' + outcome, k -> made("sluice.decisions",
        List.of("policy", policy, "outcome", outcome))).increment();
    double seconds = nanos / 1e9;
    int i = 0;
    while (i < BOUNDS.length && seconds > BOUNDS[i]) {
      i++;
    }
    buckets[i].increment();
    latencySum.add(nanos);
    latencyCount.increment();
  }

  /**
   * One descriptor decided by Envoy's API: its domain (a configured one, or "unknown": request
   * values never become labels), its outcome, and for a {@code detailed_metric} descriptor its
   * configured path.
   */
  void envoy(String domain, String outcome, String detailedPath) {
    envoy.computeIfAbsent(domain + '\u0000' + outcome, k -> new LongAdder()).increment();
    if (detailedPath != null) {
      envoyDetailed.computeIfAbsent(domain + '\u0000' + detailedPath + '\u0000' + outcome,
          k -> new LongAdder()).increment();
    }
  }

  void response(int status) {
    responses.computeIfAbsent(status, k -> made("sluice.http.responses",
        List.of("code", Integer.toString(status)))).increment();
  }

  /** The exposition, with each policy's store and lease figures. */
  String render(List<PolicyCounters> policies, boolean leases) {
    StringBuilder b = new StringBuilder(2048);
    b.append("# HELP sluice_decisions_total Decisions by policy and outcome (allowed, rejected, unavailable).\n");
    b.append("# TYPE sluice_decisions_total counter\n");
    decisions.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
      String[] k = e.getKey().split("\u0000", 2);
      b.append("sluice_decisions_total{policy=\"").append(escape(k[0])).append("\",outcome=\"")
          .append(k[1]).append("\"} ").append(e.getValue().sum()).append('\n');
    });
    b.append("# HELP sluice_decision_duration_seconds Time to decide one request, store included.\n");
    b.append("# TYPE sluice_decision_duration_seconds histogram\n");
    long cumulative = 0;
    for (int i = 0; i < BOUNDS.length; i++) {
      cumulative += buckets[i].sum();
      b.append("sluice_decision_duration_seconds_bucket{le=\"")
          .append(BigDecimal.valueOf(BOUNDS[i]).toPlainString()).append("\"} ")
          .append(cumulative).append('\n');
    }
    cumulative += buckets[BOUNDS.length].sum();
    b.append("sluice_decision_duration_seconds_bucket{le=\"+Inf\"} ").append(cumulative).append('\n');
    b.append("sluice_decision_duration_seconds_sum ").append(latencySum.sum() / 1e9).append('\n');
    b.append("sluice_decision_duration_seconds_count ").append(latencyCount.sum()).append('\n');
    perPolicy(b, policies, PolicyCounters::storeErrors, "sluice_store_errors_total", "counter",
        "Calls to the shared store that failed, by policy.");
    perPolicy(b, policies, PolicyCounters::degradedDecisions, "sluice_degraded_decisions_total",
        "counter", "Decisions the failure policy answered, by policy.");
    perPolicy(b, policies, PolicyCounters::keysHeld, "sluice_keys", "gauge",
        "Keys a policy holds in this instance's memory (in-memory store or fallback).");
    perPolicy(b, policies, PolicyCounters::maximumKeys, "sluice_maximum_keys", "gauge",
        "The most keys a policy may hold in memory.");
    if (leases) {
      perPolicy(b, policies, p -> p.leased() ? 1 : 0, "sluice_policy_leased", "gauge",
          "1 when the policy is in fleet mode (leases), 0 when it makes one store call per decision.");
      perPolicy(b, policies, p -> p.lease().leaseCalls(), "sluice_lease_calls_total", "counter",
          "Lease and release calls to the shared store.");
      perPolicy(b, policies, p -> p.lease().unitsGranted(), "sluice_lease_units_granted_total",
          "counter", "Units granted by leases, charged to the shared bucket when granted.");
      perPolicy(b, policies, p -> p.lease().unitsReturned(), "sluice_lease_units_returned_total",
          "counter", "Units given back unspent (expiry, reload, shutdown).");
      perPolicy(b, policies, p -> p.lease().unitsStranded(), "sluice_lease_units_stranded_total",
          "counter", "Units charged and neither spent nor given back.");
      perPolicy(b, policies, p -> p.lease().unitsHeld(), "sluice_lease_units_held", "gauge",
          "Units this instance holds now.");
      perPolicy(b, policies, p -> (long) p.lease().unitsSpent(), "sluice_lease_units_spent_total",
          "counter", "Units admitted from leases without a store call (whole units).");
      perPolicy(b, policies, p -> p.lease().localRejections(),
          "sluice_lease_local_rejections_total", "counter",
          "Rejections of a hot key answered locally.");
      perPolicy(b, policies, p -> p.lease().unitsReconciled(),
          "sluice_lease_units_reconciled_total", "counter",
          "Units admitted during an outage and charged to the shared bucket afterwards.");
    }
    if (!envoy.isEmpty()) {
      b.append("# HELP sluice_envoy_descriptors_total Descriptors Envoy's API decided, by domain"
          + " and outcome (ok, over_limit, shadow_over_limit, no_limit).\n");
      b.append("# TYPE sluice_envoy_descriptors_total counter\n");
      envoy.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
        String[] k = e.getKey().split("\u0000", 2);
        b.append("sluice_envoy_descriptors_total{domain=\"").append(escape(k[0]))
            .append("\",outcome=\"").append(k[1]).append("\"} ").append(e.getValue().sum())
            .append('\n');
      });
    }
    if (!envoyDetailed.isEmpty()) {
      b.append("# HELP sluice_envoy_descriptor_decisions_total Decisions of descriptors with"
          + " detailed_metric, by their configured path and outcome.\n");
      b.append("# TYPE sluice_envoy_descriptor_decisions_total counter\n");
      envoyDetailed.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
        String[] k = e.getKey().split("\u0000", 3);
        b.append("sluice_envoy_descriptor_decisions_total{domain=\"").append(escape(k[0]))
            .append("\",descriptor=\"").append(escape(k[1])).append("\",outcome=\"")
            .append(k[2]).append("\"} ").append(e.getValue().sum()).append('\n');
      });
    }
    b.append("# HELP sluice_http_responses_total HTTP responses by status code.\n");
    b.append("# TYPE sluice_http_responses_total counter\n");
    responses.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e ->
        b.append("sluice_http_responses_total{code=\"").append(e.getKey()).append("\"} ")
            .append(e.getValue().sum()).append('\n'));
    if (envoyMalformed.sum() > 0) {
      b.append("# HELP sluice_envoy_malformed_requests_total Envoy requests that were not a valid"
          + " RateLimitRequest (answered INVALID_ARGUMENT).\n");
      b.append("# TYPE sluice_envoy_malformed_requests_total counter\n");
      b.append("sluice_envoy_malformed_requests_total ").append(envoyMalformed.sum()).append('\n');
    }
    b.append("# HELP sluice_config_reloads_total Configuration reloads by result.\n");
    b.append("# TYPE sluice_config_reloads_total counter\n");
    b.append("sluice_config_reloads_total{result=\"ok\"} ").append(reloadsOk.sum()).append('\n');
    b.append("sluice_config_reloads_total{result=\"error\"} ").append(reloadsFailed.sum()).append('\n');
    return b.toString();
  }

  /** One metric with a sample per policy. */
  private static void perPolicy(StringBuilder b, List<PolicyCounters> policies,
      ToLongFunction<PolicyCounters> value, String name, String type, String help) {
    b.append("# HELP ").append(name).append(' ').append(help).append('\n');
    b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    for (PolicyCounters p : policies) {
      b.append(name).append("{policy=\"").append(escape(p.policy())).append("\"} ")
          .append(value.applyAsLong(p)).append('\n');
    }
  }

  /** One metric with a sample per limit and priority. */
  private static void byPriority(StringBuilder b, Map<String, ConcurrencyLimiter> limiters,
      String name, String type, String help,
      ToDoubleBiFunction<ConcurrencyStats, Priority> value) {
    b.append("# HELP ").append(name).append(' ').append(help).append('\n');
    b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    limiters.forEach((limit, l) -> {
      ConcurrencyStats st = l.stats();
      for (Priority p : Priority.values()) {
        double v = value.applyAsDouble(st, p);
        b.append(name).append("{limit=\"").append(escape(limit)).append("\",priority=\"")
            .append(p.name().toLowerCase(Locale.ROOT)).append("\"} ")
            .append(v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v))
            .append('\n');
      }
    });
  }

  private static String escape(String s) {
    return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  /** The concurrency limiters' figures, and the permit ids the service holds. */
  /**
   * One line per metered key whose limit is adaptive and has measured {@code value} (a key with
   * a fixed limit, or before a first window, has none).
   */
  private static void adaptiveLines(StringBuilder b, Map<String, ConcurrencyLimiter> limiters,
      Map<String, List<String>> meteredKeys, String name, ToDoubleFunction<AdaptiveLimit> value) {
    meteredKeys.forEach((limit, keys) -> {
      ConcurrencyLimiter l = limiters.get(limit);
      for (String key : keys) {
        AdaptiveLimit a = l == null ? null : l.adaptiveLimit(key);
        double v = a == null ? Double.NaN : value.applyAsDouble(a);
        if (!Double.isNaN(v)) {
          b.append(name).append("{limit=\"").append(escape(limit)).append("\",key=\"")
              .append(escape(key)).append("\"} ").append(v).append('\n');
        }
      }
    });
  }

  static String concurrency(Map<String, ConcurrencyLimiter> limiters, long held,
      Map<String, List<String>> meteredKeys) {
    if (limiters.isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder(512);
    b.append("# HELP sluice_concurrency_in_flight Weight of the permits in flight, by limit.\n");
    b.append("# TYPE sluice_concurrency_in_flight gauge\n");
    limiters.forEach((name, l) -> b.append("sluice_concurrency_in_flight{limit=\"").append(name)
        .append("\"} ").append(l.stats().inFlight()).append('\n'));
    b.append("# HELP sluice_concurrency_key_limit The limit of the moment (an adaptive limit's"
        + " current value) of the keys last asked for, by limit and key.\n");
    b.append("# TYPE sluice_concurrency_key_limit gauge\n");
    meteredKeys.forEach((name, keys) -> {
      ConcurrencyLimiter l = limiters.get(name);
      for (String key : keys) {
        b.append("sluice_concurrency_key_limit{limit=\"").append(escape(name)).append("\",key=\"")
            .append(escape(key)).append("\"} ").append(l.limit(key)).append('\n');
      }
    });
    b.append("# HELP sluice_concurrency_key_no_load_latency_seconds The latency an adaptive"
        + " limit believes the backend has with no queue, of the keys last asked for.\n");
    b.append("# TYPE sluice_concurrency_key_no_load_latency_seconds gauge\n");
    adaptiveLines(b, limiters, meteredKeys, "sluice_concurrency_key_no_load_latency_seconds",
        a -> a.noLoadLatencyNanos() / 1e9);
    b.append("# HELP sluice_concurrency_key_gradient The factor an adaptive limit last scaled"
        + " itself by for its latency (1: no queue), of the keys last asked for.\n");
    b.append("# TYPE sluice_concurrency_key_gradient gauge\n");
    adaptiveLines(b, limiters, meteredKeys, "sluice_concurrency_key_gradient",
        AdaptiveLimit::gradient);
    b.append("# HELP sluice_concurrency_acquired_total Permits acquired, by limit.\n");
    b.append("# TYPE sluice_concurrency_acquired_total counter\n");
    limiters.forEach((name, l) -> b.append("sluice_concurrency_acquired_total{limit=\"")
        .append(name).append("\"} ").append(l.stats().acquired()).append('\n'));
    b.append("# HELP sluice_concurrency_refused_total Acquisitions refused, by limit and reason.\n");
    b.append("# TYPE sluice_concurrency_refused_total counter\n");
    limiters.forEach((name, l) -> {
      ConcurrencyStats s = l.stats();
      for (Refusal r : Refusal.values()) {
        b.append("sluice_concurrency_refused_total{limit=\"").append(name).append("\",reason=\"")
            .append(r.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.refused(r))
            .append('\n');
      }
    });
    b.append("# HELP sluice_concurrency_ended_total Permits that ended, by limit and outcome.\n");
    b.append("# TYPE sluice_concurrency_ended_total counter\n");
    limiters.forEach((name, l) -> {
      ConcurrencyStats s = l.stats();
      for (Outcome o : Outcome.values()) {
        b.append("sluice_concurrency_ended_total{limit=\"").append(name).append("\",outcome=\"")
            .append(o.name().toLowerCase(Locale.ROOT)).append("\"} ").append(s.ended(o))
            .append('\n');
      }
    });
    byPriority(b, limiters, "sluice_concurrency_priority_waiting", "gauge",
        "Acquisitions waiting, by limit and priority.", (st, p) -> st.waiting(p));
    byPriority(b, limiters, "sluice_concurrency_priority_flows", "gauge",
        "Flows fair queuing has seen within its memory (an estimate summed over keys; 0"
            + " without fair queuing), by limit and priority.", (st, p) -> st.flows(p));
    byPriority(b, limiters, "sluice_concurrency_priority_dispatched_total", "counter",
        "Waiters given a permit, by limit and priority.", (st, p) -> st.dispatched(p));
    byPriority(b, limiters, "sluice_concurrency_priority_refused_total", "counter",
        "Acquisitions refused, by limit and priority.", (st, p) -> st.refused(p));
    b.append("# HELP sluice_concurrency_permits_held Permit ids the service holds.\n");
    b.append("# TYPE sluice_concurrency_permits_held gauge\n");
    b.append("sluice_concurrency_permits_held ").append(held).append('\n');
    return b.toString();
  }
}

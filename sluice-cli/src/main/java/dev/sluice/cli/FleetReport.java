package dev.sluice.cli;

import dev.sluice.LeaseStats;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The figures of fleet simulations: a summary per mode, then the series. */
final class FleetReport {
  private FleetReport() {}

  /** The headline figures of one run, in order, by name. */
  static Map<String, Object> summary(FleetSimulation.Result r) {
    FleetSimulation.Settings s = r.settings;
    int n = r.buckets;
    int steady = Math.min(n, r.steadyFrom());
    double steadySeconds = (n - steady) * FleetSimulation.BUCKET / 1e9;
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("mode", r.mode());
    m.put("offered", FleetSimulation.Result.sum(r.offered, 0, n));
    m.put("admitted", FleetSimulation.Result.sum(r.admitted, 0, n));
    m.put("oracle", FleetSimulation.Result.sum(r.oracle, 0, n));
    long steadyAdmitted = FleetSimulation.Result.sum(r.admitted, steady, n);
    long steadyOracle = FleetSimulation.Result.sum(r.oracle, steady, n);
    m.put("steadyAdmittedPerOracle", steadyOracle == 0 ? Double.NaN : (double) steadyAdmitted / steadyOracle);
    long excess = r.maxExcess((int) Math.round(1e9 / FleetSimulation.BUCKET));
    m.put("maxExcessOver1s", excess);
    m.put("maxExcessShareOfLimit", excess / s.limitRate());
    m.put("secondsTo95PercentOfLimit", r.secondsToReach(0.95));
    double calls = steadySeconds == 0 ? Double.NaN
        : FleetSimulation.Result.sum(r.storeCalls, steady, n) / steadySeconds;
    m.put("steadyStoreCallsPerSecond", calls);
    m.put("steadyStoreCallsPerSecondPerInstance", calls / s.instances());
    FleetSimulation.Histogram decisions = new FleetSimulation.Histogram();
    FleetSimulation.Histogram store = new FleetSimulation.Histogram();
    for (int i = steady; i < n; i++) {
      decisions.addAll(r.decisionLatency[i]);
      store.addAll(r.storeLatency[i]);
    }
    m.put("steadyDecisionP50Millis", decisions.quantileMillis(0.5));
    m.put("steadyDecisionP99Millis", decisions.quantileMillis(0.99));
    m.put("steadyStoreCallP99Millis", store.quantileMillis(0.99));
    m.put("degraded", FleetSimulation.Result.sum(r.degraded, 0, n));
    LeaseStats l = r.leases;
    m.put("unitsGranted", l.unitsGranted());
    m.put("unitsReturned", l.unitsReturned());
    m.put("unitsStranded", l.unitsStranded());
    m.put("unitsSpent", (long) l.unitsSpent());
    m.put("localRejections", l.localRejections());
    m.put("unitsReconciled", l.unitsReconciled());
    if (s.outageSeconds() > 0) {
      double limit = s.limitRate() * s.outageSeconds();
      m.put("outageSeconds", s.outageSeconds());
      m.put("outageAdmitted", r.outageAdmitted);
      m.put("outageOracle", r.outageOracle);
      m.put("outageAdmittedPerLimit", r.outageAdmitted / limit);
      m.put("heldAtOutage", r.heldAtOutage);
      m.put("leaseBound", leaseBound(s));
    }
    m.put("simulatedSeconds", s.seconds());
    m.put("wallSeconds", r.wallNanos / 1e9);
    return m;
  }

  /**
   * What the gateways may hold together (docs/fleet.md): N times each one's cap, the least of the
   * capacity, the excess share of a second of the rate and a lifetime of the rate, over N.
   */
  static long leaseBound(FleetSimulation.Settings s) {
    double lifetime = s.leases().lifetime().toNanos() / 1e9;
    double fleet = Math.min(s.limitBurst(), Math.min(s.leases().excessShare() * s.limitRate(),
        s.limitRate() * lifetime));
    return (long) Math.floor(fleet / s.instances()) * s.instances();
  }

  // FormatString: the summary's values are the Long and Double summary() puts; FleetCommandTest prints every line
  @SuppressWarnings("FormatString")
  static String table(List<FleetSimulation.Result> results) {
    StringBuilder b = new StringBuilder();
    FleetSimulation.Settings s = results.get(0).settings;
    b.append(String.format(Locale.ROOT, "%d gateways%s; offered %s/s, %s/s from %ss (ramp %s ms)%s;"
            + " limit %s/s burst %s; store %s calls/s, %s ms each way, timeout %s ms; seed %d%n%n",
        s.instances(), s.skewedInstances() > 0 ? String.format(Locale.ROOT, " (%d at %sx)",
            s.skewedInstances(), Report.num(s.skewFactor())) : "",
        Report.num(s.baseRate()), Report.num(s.peakRate()), Report.num(s.stepAt()),
        Report.num(s.rampSeconds() * 1000), s.clients() > 0 ? String.format(Locale.ROOT,
            " from %d clients of %s/s burst %s", s.clients(), Report.num(s.clientRate()),
            Report.num(s.clientBurst())) : "",
        Report.num(s.limitRate()), Report.num(s.limitBurst()),
        Report.num(s.storeCallsPerSecond()), Report.num(s.oneWayMillis()),
        Report.num(s.timeoutMillis()), s.seed()));
    for (FleetSimulation.Result r : results) {
      Map<String, Object> m = summary(r);
      b.append(String.format(Locale.ROOT, "%s mode (%s on store failure%s):%n", r.mode(),
          r.settings.onFailure().name().toLowerCase(Locale.ROOT).replace('_', '-'),
          r.settings.leased() ? String.format(Locale.ROOT, "; leases: lifetime %s ms, excess share %s%%",
              r.settings.leases().lifetime().toMillis(),
              Report.num(r.settings.leases().excessShare() * 100)) : ""));
      b.append(String.format(Locale.ROOT, "  admitted %d of %d offered; the oracle admitted %d%n",
          m.get("admitted"), m.get("offered"), m.get("oracle")));
      b.append(String.format(Locale.ROOT, "  steady state: admitted %.1f%% of the oracle; store"
              + " calls %.0f/s (%.1f/s per gateway); decision p50 %s, p99 %s; store call p99 %s%n",
          100 * (double) m.get("steadyAdmittedPerOracle"), m.get("steadyStoreCallsPerSecond"),
          m.get("steadyStoreCallsPerSecondPerInstance"), ms(m.get("steadyDecisionP50Millis")),
          ms(m.get("steadyDecisionP99Millis")), ms(m.get("steadyStoreCallP99Millis"))));
      b.append(String.format(Locale.ROOT, "  most admitted beyond the oracle in any 1 s: %d (%.2f%%"
              + " of the limit); reached 95%% of the limit %s after the step; degraded decisions %d%n",
          m.get("maxExcessOver1s"), 100 * (double) m.get("maxExcessShareOfLimit"),
          seconds((double) m.get("secondsTo95PercentOfLimit")), m.get("degraded")));
      if (m.containsKey("outageAdmitted")) {
        b.append(String.format(Locale.ROOT, "  store down %s s from %s s: admitted %d (%.3f of"
                + " the limit's %s; the oracle %d); the gateways held %d when it went down (at most %d with grants in flight)%n",
            Report.num(s.outageSeconds()), Report.num(s.outageAt()), m.get("outageAdmitted"),
            m.get("outageAdmittedPerLimit"), Report.num(s.limitRate() * s.outageSeconds()),
            m.get("outageOracle"), m.get("heldAtOutage"), m.get("leaseBound")));
      }
      if (r.settings.leased()) {
        b.append(String.format(Locale.ROOT, "  leases: %d units granted, %d returned, %d stranded;"
                + " %d spent locally, %d local rejections; %d admitted during an outage charged"
            + " afterwards%n", m.get("unitsGranted"), m.get("unitsReturned"),
            m.get("unitsStranded"), m.get("unitsSpent"), m.get("localRejections"),
            m.get("unitsReconciled")));
      }
      b.append(String.format(Locale.ROOT, "  %s s simulated in %.1f s%n%n",
          Report.num(r.settings.seconds()), m.get("wallSeconds")));
    }
    List<String> head = new ArrayList<>(List.of("t (s)", "offered/s", "oracle/s"));
    for (FleetSimulation.Result r : results) {
      head.addAll(List.of(r.mode() + " admitted/s", "store calls/s", "store p99 ms", "degraded/s"));
    }
    b.append(String.join("  ", head)).append(System.lineSeparator());
    int per = (int) Math.round(1e9 / FleetSimulation.BUCKET);
    FleetSimulation.Result first = results.get(0);
    for (int sec = 0; sec * per < first.buckets; sec++) {
      int from = sec * per;
      int to = Math.min(first.buckets, from + per);
      b.append(String.format(Locale.ROOT, "%5d  %9d  %8d", sec,
          FleetSimulation.Result.sum(first.offered, from, to),
          FleetSimulation.Result.sum(first.oracle, from, to)));
      for (FleetSimulation.Result r : results) {
        FleetSimulation.Histogram h = new FleetSimulation.Histogram();
        for (int i = from; i < to; i++) {
          h.addAll(r.storeLatency[i]);
        }
        b.append(String.format(Locale.ROOT, "  %" + (r.mode().length() + 12) + "d  %13d  %12s  %10d",
            FleetSimulation.Result.sum(r.admitted, from, to),
            FleetSimulation.Result.sum(r.storeCalls, from, to), ms(h.quantileMillis(0.99)),
            FleetSimulation.Result.sum(r.degraded, from, to)));
      }
      b.append(System.lineSeparator());
    }
    return b.toString();
  }

  static String csv(List<FleetSimulation.Result> results) {
    StringBuilder b = new StringBuilder(
        "mode,t_ms,offered,admitted,oracle,store_calls,store_p50_ms,store_p99_ms,decision_p99_ms,degraded\n");
    for (FleetSimulation.Result r : results) {
      for (int i = 0; i < r.buckets; i++) {
        b.append(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%d,%s,%s,%s,%d%n", r.mode(),
            i * FleetSimulation.BUCKET / 1_000_000, r.offered[i], r.admitted[i], r.oracle[i],
            r.storeCalls[i], ms(r.storeLatency[i].quantileMillis(0.5)),
            ms(r.storeLatency[i].quantileMillis(0.99)),
            ms(r.decisionLatency[i].quantileMillis(0.99)), r.degraded[i]));
      }
    }
    return b.toString();
  }

  static String json(List<FleetSimulation.Result> results) {
    StringBuilder b = new StringBuilder("[");
    for (int k = 0; k < results.size(); k++) {
      b.append(k == 0 ? "\n  {" : ",\n  {");
      int i = 0;
      for (Map.Entry<String, Object> e : summary(results.get(k)).entrySet()) {
        Object v = e.getValue();
        String text = v instanceof String str ? "\"" + str + "\""
            : v instanceof Double d && (d.isNaN() || d.isInfinite()) ? "null"
            : v instanceof Double d ? String.format(Locale.ROOT, "%.6g", d) : v.toString();
        b.append(i++ == 0 ? "" : ", ").append('"').append(e.getKey()).append("\": ").append(text);
      }
      b.append('}');
    }
    return b.append("\n]\n").toString();
  }

  private static String ms(Object millis) {
    double v = (double) millis;
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
  }

  private static String seconds(double s) {
    return Double.isInfinite(s) ? "never" : String.format(Locale.ROOT, "%.1f s", s);
  }
}

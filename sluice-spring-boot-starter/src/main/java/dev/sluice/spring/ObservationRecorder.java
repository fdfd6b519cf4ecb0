package dev.sluice.spring;

import dev.sluice.Decision;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Locale;

/**
 * Records a policy's decisions on the current observation ({@code sluice.observation}, docs/
 * spring.md "Tracing"): the policy, the outcome (allowed, refused, unavailable), the deciding
 * limit and whether the failure policy answered, as low-cardinality key values; the key, a
 * high-cardinality one, only when asked (keys can be personal data). A request that meets
 * several policies carries the last decision's.
 */
final class ObservationRecorder implements RecordingLimiter.Recorder {
  private final ObservationRegistry registry;
  private final String policy;
  private final boolean keys;

  ObservationRecorder(ObservationRegistry registry, String policy, boolean keys) {
    this.registry = registry;
    this.policy = policy;
    this.keys = keys;
  }

  @Override
  public void record(String key, Decision d) {
    Observation o = registry.getCurrentObservation();
    if (o == null || o.isNoop()) {
      return;
    }
    String outcome = d.isAllowed() ? "allowed" : d.isUnavailable() ? "unavailable" : "refused";
    o.lowCardinalityKeyValue("sluice.policy", policy);
    o.lowCardinalityKeyValue("sluice.outcome", outcome);
    o.lowCardinalityKeyValue("sluice.degraded", Boolean.toString(d.isDegraded()));
    if (d.limit() != null) {
      o.lowCardinalityKeyValue("sluice.limit", d.limit().name());
    }
    if (keys) {
      o.highCardinalityKeyValue("sluice.key", key);
    }
    if (!d.isAllowed()) {
      o.event(Observation.Event.of("sluice." + outcome.toLowerCase(Locale.ROOT),
          "sluice " + outcome + " by " + policy));
    }
  }
}

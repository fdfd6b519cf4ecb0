package dev.sluice.spring;

import dev.sluice.internal.QuotaFields;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;
import org.springframework.lang.Nullable;

/**
 * Actuator's {@code sluicequotas} endpoint (docs/spring.md, "Quotas"): {@code GET} lists the
 * quotas and the newest changes of their audit trail; with {@code sluice.quotas.write-enabled},
 * {@code POST} sets a quota (the fields of the service's {@code PUT /v1/quotas} with one limit's
 * fields at the top, checked the same way: every problem named in one 400, nothing set) and
 * {@code DELETE} removes one. Who may call
 * it is Actuator's to say (its exposure, and Spring Security where the application has it).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#quotas-sluicequotas">docs/spring.md, "Quotas (sluice.quotas)"</a>.
 */
@WebEndpoint(id = "sluicequotas")
public class SluiceQuotasEndpoint {
  /** Changes of the audit trail the listing gives. */
  static final int AUDIT = 50;

  private final QuotaStore store;
  private final Quotas quotas;
  private final boolean writeEnabled;
  private final Set<String> policies;
  private final Set<String> concurrencyLimits;
  private final long ticksPerSecond;

  SluiceQuotasEndpoint(SluiceLimiters limiters, boolean writeEnabled) {
    this.store = limiters.quotaStore().orElseThrow();
    this.quotas = limiters.quotas().orElseThrow();
    this.writeEnabled = writeEnabled;
    this.policies = Set.copyOf(limiters.all().keySet());
    this.concurrencyLimits = Set.copyOf(limiters.allConcurrency().keySet());
    this.ticksPerSecond = limiters.store().map(s -> s.ticksPerSecond()).orElse(1_000_000_000L);
  }

  /** The quotas, the store's version of them, and the newest changes. */
  @ReadOperation
  public Map<String, Object> quotas() {
    QuotaStore.Snapshot s = store.read();
    List<Map<String, Object>> list = new ArrayList<>();
    for (Quota q : s.quotas()) {
      list.add(QuotaFields.toMap(q));
    }
    List<Map<String, Object>> audit = new ArrayList<>();
    for (QuotaChange c : store.audit(AUDIT)) {
      audit.add(QuotaFields.toMap(c));
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("version", s.version());
    out.put("writeEnabled", writeEnabled);
    out.put("quotas", list);
    out.put("audit", audit);
    return out;
  }

  /**
   * Sets a quota: 200 with the store's version, 400 naming every problem, 403 when off. Actuator
   * takes a flat JSON object, so a quota set here has one rate limit, in the policies file's
   * fields ({@code algorithm}, {@code capacity}, {@code rate}, ...), or a {@code concurrency}.
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> set(String policy, String key, String who,
      @Nullable Boolean prefix, @Nullable String algorithm, @Nullable String capacity,
      @Nullable String burst, @Nullable String rate, @Nullable String limit,
      @Nullable String window, @Nullable String penalty, @Nullable Integer concurrency,
      @Nullable String expiresAt, @Nullable String reason) {
    if (!writeEnabled) {
      return off();
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("policy", policy);
    body.put("key", key);
    body.put("who", who);
    put(body, "prefix", prefix);
    Map<String, Object> fields = new LinkedHashMap<>();
    put(fields, "algorithm", algorithm);
    put(fields, "capacity", capacity);
    put(fields, "burst", burst);
    put(fields, "rate", rate);
    put(fields, "limit", limit);
    put(fields, "window", window);
    put(fields, "penalty", penalty);
    if (!fields.isEmpty()) {
      body.put("limits", List.of(fields));
    }
    put(body, "concurrency", concurrency);
    put(body, "expiresAt", expiresAt);
    put(body, "reason", reason);
    List<String> problems = new ArrayList<>();
    Quota quota = QuotaFields.parse(body, policies, concurrencyLimits, ticksPerSecond, problems);
    if (quota == null) {
      return problem(400, "the quota was not set: " + String.join("; ", problems));
    }
    long version;
    try {
      version = store.put(quota, who);
    } catch (IllegalStateException e) {
      return problem(409, e.getMessage());
    }
    quotas.refresh();   // this instance at once; the others within their refresh
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("version", version);
    out.put("quota", QuotaFields.toMap(quota));
    return new WebEndpointResponse<>(out, 200);
  }

  /** Removes a quota: 200, 404 when there is none, 403 when off. */
  @DeleteOperation
  public WebEndpointResponse<Map<String, Object>> remove(String policy, String key, String who,
      @Nullable Boolean prefix, @Nullable String reason) {
    if (!writeEnabled) {
      return off();
    }
    boolean p = prefix != null && prefix;
    long before = store.version();
    long version = store.remove(policy, key, p, who, reason == null ? "" : reason);
    quotas.refresh();
    if (version == before) {
      return problem(404, "no quota for " + (p ? "prefix '" : "key '") + key + "' of '"
          + policy + "'");
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("version", version);
    out.put("removed", true);
    return new WebEndpointResponse<>(out, 200);
  }

  private static void put(Map<String, Object> body, String field, Object value) {
    if (value != null) {
      body.put(field, value);
    }
  }

  private static WebEndpointResponse<Map<String, Object>> off() {
    return problem(403, "quotas are read-only here: set sluice.quotas.write-enabled=true to set"
        + " and remove them through Actuator");
  }

  private static WebEndpointResponse<Map<String, Object>> problem(int status, String detail) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", status);
    body.put("detail", detail);
    return new WebEndpointResponse<>(body, status);
  }
}

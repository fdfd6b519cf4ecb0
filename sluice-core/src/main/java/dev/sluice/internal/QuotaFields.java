package dev.sluice.internal;

import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A quota as the admin APIs take it (the service's {@code PUT /v1/quotas}, the starter's Actuator
 * endpoint): {@code policy}, {@code key}, {@code prefix}, {@code limits} (each in the policies
 * file's fields) or {@code concurrency}, {@code expiresAt}, {@code reason}, {@code who}, read from
 * a JSON object's values (strings, numbers, booleans, lists and maps), checked as the policies
 * file is: every problem named, nothing made when there is one.
 */
public final class QuotaFields {
  /** The fields a quota may have. */
  public static final Set<String> FIELDS = Set.of("policy", "key", "prefix", "limits",
      "concurrency", "expiresAt", "reason", "who");

  private QuotaFields() {}

  /**
   * The quota {@code body} describes, or null after adding every problem to {@code problems}.
   *
   * @param policies the rate policies a quota may name
   * @param concurrencyLimits the concurrency limits a quota may name
   * @param ticksPerSecond the store's clock resolution the limits must fit
   */
  public static Quota parse(Map<String, ?> body, Set<String> policies,
      Set<String> concurrencyLimits, long ticksPerSecond, List<String> problems) {
    int before = problems.size();
    for (String f : body.keySet()) {
      if (!FIELDS.contains(f)) {
        problems.add("unknown field '" + f + "' (expected " + new TreeSet<>(FIELDS) + ")");
      }
    }
    String policy = text(body, "policy", problems, true);
    String key = text(body, "key", problems, true);
    text(body, "who", problems, true);
    String reason = body.containsKey("reason") ? text(body, "reason", problems, false) : "";
    Object prefixValue = body.get("prefix");
    boolean prefix = false;
    if (prefixValue instanceof Boolean b) {
      prefix = b;
    } else if (prefixValue != null) {
      problems.add("'prefix' must be true or false but was " + show(prefixValue));
    }
    Instant expires = null;
    if (body.get("expiresAt") != null) {
      try {
        expires = Instant.parse(String.valueOf(body.get("expiresAt")));
      } catch (DateTimeParseException e) {
        problems.add("'expiresAt' must be an instant such as 2026-12-04T18:00:00Z but was "
            + show(body.get("expiresAt")));
      }
    }
    List<Limit> limits = new ArrayList<>();
    int concurrency = 0;
    if (body.containsKey("limits") == body.containsKey("concurrency")) {
      problems.add("a quota has 'limits' (rate limits, as the policies file writes them) or"
          + " 'concurrency' (a concurrency limit), one of them");
    } else if (body.containsKey("concurrency")) {
      Object c = body.get("concurrency");
      if (!(c instanceof Integer || c instanceof Long) || ((Number) c).longValue() < 1
          || ((Number) c).longValue() > 1_000_000) {
        problems.add("'concurrency' must be a whole number from 1 to 1000000 but was "
            + show(c));
      } else {
        concurrency = ((Number) c).intValue();
      }
      if (policy != null && !concurrencyLimits.contains(policy)) {
        problems.add("no concurrency limit '" + policy + "' (the concurrency limits are "
            + new TreeSet<>(concurrencyLimits) + ")");
      }
    } else {
      if (!(body.get("limits") instanceof List<?> ls) || ls.isEmpty()) {
        problems.add("'limits' must be a non-empty array of limits such as {\"algorithm\":"
            + " \"leaky-bucket\", \"capacity\": 10, \"rate\": \"10/s\"}");
      } else {
        for (int i = 0; i < ls.size(); i++) {
          Limit l = limit(ls.get(i), "limits[" + i + "]", policy, ticksPerSecond, problems);
          if (l != null) {
            limits.add(l);
          }
        }
      }
      if (policy != null && !policies.contains(policy)) {
        problems.add("no policy '" + policy + "' (the policies are " + new TreeSet<>(policies)
            + ")");
      }
    }
    if (problems.size() > before) {
      return null;
    }
    try {
      return new Quota(policy, key, prefix, limits, concurrency, expires, reason);
    } catch (IllegalArgumentException e) {
      problems.add(e.getMessage());
      return null;
    }
  }

  /**
   * A quota in the fields it is set with, for a JSON answer: its limits each in the policies
   * file's fields (so that a listed quota can be set again as it is).
   */
  public static Map<String, Object> toMap(Quota q) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("policy", q.policy());
    m.put("key", q.key());
    m.put("prefix", q.prefix());
    if (q.isConcurrency()) {
      m.put("concurrency", q.concurrency());
    } else {
      List<Map<String, Object>> limits = new ArrayList<>();
      for (Limit l : q.limits()) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("algorithm", l.algorithm().id());
        if (l.rate() != null) {
          f.put("capacity", l.capacity());
          f.put("rate", l.rate().toString());
        } else {
          f.put("limit", l.capacity());
          f.put("window", l.window().toMillis() + "ms");
        }
        if (!l.penalty().isZero()) {
          f.put("penalty", l.penalty().toMillis() + "ms");
        }
        f.put("name", l.name());
        limits.add(f);
      }
      m.put("limits", limits);
    }
    if (q.expiresAt() != null) {
      m.put("expiresAt", q.expiresAt().toString());
    }
    m.put("reason", q.reason());
    return m;
  }

  /** A change of the audit trail: version, at, who, before and after (when there are), reason. */
  public static Map<String, Object> toMap(QuotaChange c) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("version", c.version());
    m.put("at", c.at().toString());
    m.put("who", c.who());
    if (c.before() != null) {
      m.put("before", toMap(c.before()));
    }
    if (c.after() != null) {
      m.put("after", toMap(c.after()));
    }
    m.put("reason", c.reason());
    return m;
  }

  /** One limit as the policies file writes it, checked by the same reader. */
  private static Limit limit(Object n, String at, String policy, long ticksPerSecond,
      List<String> problems) {
    if (!(n instanceof Map<?, ?> m)) {
      problems.add(at + " must be an object such as {\"algorithm\": \"leaky-bucket\","
          + " \"capacity\": 10, \"rate\": \"10/s\"}");
      return null;
    }
    Map<String, String> fields = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : m.entrySet()) {
      String name = String.valueOf(e.getKey());
      if (!LimitSpec.FIELDS.contains(name)) {
        problems.add(at + ": unknown field '" + name + "' (expected "
            + new TreeSet<>(LimitSpec.FIELDS) + ")");
        continue;
      }
      Object v = e.getValue();
      fields.put(name, v instanceof Double d && d == Math.rint(d) && !d.isInfinite()
          ? Long.toString(d.longValue()) : String.valueOf(v));
    }
    return LimitSpec.parse(fields, policy == null ? "quota" : policy, ticksPerSecond,
        (field, message) -> problems.add(at + ": " + message));
  }

  private static String text(Map<String, ?> body, String field, List<String> problems,
      boolean required) {
    Object v = body.get(field);
    if (v == null) {
      if (required) {
        problems.add("'" + field + "' is missing");
      }
      return null;
    }
    if (!(v instanceof String s) || (required && s.isEmpty())) {
      problems.add("'" + field + "' must be a " + (required ? "non-empty " : "") + "string but"
          + " was " + show(v));
      return null;
    }
    return s;
  }

  private static String show(Object v) {
    return v instanceof String s ? "\"" + s + "\"" : String.valueOf(v);
  }
}

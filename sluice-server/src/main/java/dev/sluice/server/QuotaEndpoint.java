package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Fields;

/**
 * The admin API's quotas (docs/server.md, "Quotas"): {@code GET /v1/quotas} lists them, {@code
 * PUT /v1/quotas} sets one (checked as the policies file's limits are: every problem named,
 * nothing set when there is one), {@code DELETE /v1/quotas?policy=&key=} removes one, {@code GET
 * /v1/quotas/audit} tells the changes. The Router checks the admin token first.
 */
final class QuotaEndpoint {
  private static final Set<String> FIELDS = Set.of("policy", "key", "prefix", "limits",
      "concurrency", "expiresAt", "reason", "who");

  private final QuotaStore store;
  private final Quotas quotas;
  private final BodyReader bodies;
  private final Responses responses;
  private final ObjectMapper json;
  private final int maxBodyBytes;
  private final long ticksPerSecond;
  /** The policies now in force, and the concurrency limits: what a quota may name. */
  private final Supplier<Set<String>> policies;
  private final Set<String> concurrencyLimits;

  QuotaEndpoint(QuotaStore store, Quotas quotas, BodyReader bodies, Responses responses,
      ObjectMapper json, int maxBodyBytes, long ticksPerSecond, Supplier<Set<String>> policies,
      Set<String> concurrencyLimits) {
    this.store = store;
    this.quotas = quotas;
    this.bodies = bodies;
    this.responses = responses;
    this.json = json;
    this.maxBodyBytes = maxBodyBytes;
    this.ticksPerSecond = ticksPerSecond;
    this.policies = policies;
    this.concurrencyLimits = concurrencyLimits;
  }

  /** Routes {@code /v1/quotas...}; false when the path is not one of this endpoint's. */
  boolean handle(Exchange x, Request request, String method, String path) throws Refusal {
    if (path.equals("/v1/quotas/audit")) {
      if (!method.equals("GET")) {
        throw new Refusal(405, Problem.HTTP, "use GET for /v1/quotas/audit");
      }
      audit(x, Request.extractQueryParameters(request));
      return true;
    }
    if (!path.equals("/v1/quotas")) {
      return false;
    }
    switch (method) {
      case "GET" -> list(x);
      case "PUT" -> bodies.read(x, maxBodyBytes, (body, failure) -> {
        try {
          if (failure != null) {
            throw new Refusal(400, Problem.HTTP, "the body could not be read: "
                + failure.getMessage());
          }
          put(x, body);
        } catch (Refusal r) {
          Router.refuse(responses, x, r, failure != null);
        }
      });
      case "DELETE" -> remove(x, Request.extractQueryParameters(request));
      default -> throw new Refusal(405, Problem.HTTP, "use GET, PUT or DELETE for /v1/quotas");
    }
    return true;
  }

  private void list(Exchange x) {
    QuotaStore.Snapshot s = store.read();
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeNumberField("version", s.version());
      g.writeArrayFieldStart("quotas");
      for (Quota q : s.quotas()) {
        write(g, q);
      }
      g.writeEndArray();
      g.writeEndObject();
    });
  }

  static void write(JsonGenerator g, Quota q) throws IOException {
    g.writeStartObject();
    g.writeStringField("policy", q.policy());
    g.writeStringField("key", q.key());
    g.writeBooleanField("prefix", q.prefix());
    if (q.isConcurrency()) {
      g.writeNumberField("concurrency", q.concurrency());
    } else {
      g.writeArrayFieldStart("limits");
      for (Limit l : q.limits()) {
        write(g, l);
      }
      g.writeEndArray();
    }
    if (q.expiresAt() != null) {
      g.writeStringField("expiresAt", q.expiresAt().toString());
    }
    g.writeStringField("reason", q.reason());
    g.writeEndObject();
  }

  private void put(Exchange x, byte[] body) throws Refusal {
    JsonNode root;
    try {
      root = json.readTree(body);
    } catch (IOException e) {
      throw new Refusal(Problem.MALFORMED_JSON, "the body is not JSON");
    }
    if (root == null || !root.isObject()) {
      throw new Refusal(400, Problem.HTTP, "the body must be a JSON object such as {\"policy\":"
          + " \"api\", \"key\": \"customer:acme\", \"limits\": [{\"algorithm\": \"leaky-bucket\","
          + " \"capacity\": 500, \"rate\": \"500/s\"}], \"who\": \"ops\"}");
    }
    List<String> problems = new ArrayList<>();
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        problems.add("unknown field '" + f + "' (expected " + new TreeSet<>(FIELDS) + ")");
      }
    }
    String policy = text(root, "policy", problems, true);
    String key = text(root, "key", problems, true);
    String who = text(root, "who", problems, true);
    String reason = root.has("reason") ? text(root, "reason", problems, false) : "";
    boolean prefix = root.path("prefix").asBoolean(false);
    Instant expires = null;
    if (root.has("expiresAt")) {
      try {
        expires = Instant.parse(root.get("expiresAt").asText());
      } catch (DateTimeParseException e) {
        problems.add("'expiresAt' must be an instant such as 2026-12-04T18:00:00Z but was "
            + root.get("expiresAt"));
      }
    }
    List<Limit> limits = new ArrayList<>();
    int concurrency = 0;
    if (root.has("limits") == root.has("concurrency")) {
      problems.add("a quota has 'limits' (rate limits, as the policies file writes them) or"
          + " 'concurrency' (a concurrency limit), one of them");
    } else if (root.has("concurrency")) {
      JsonNode c = root.get("concurrency");
      if (!c.isIntegralNumber() || c.asLong() < 1 || c.asLong() > 1_000_000) {
        problems.add("'concurrency' must be a whole number from 1 to 1000000 but was " + c);
      } else {
        concurrency = c.asInt();
      }
      if (policy != null && !concurrencyLimits.contains(policy)) {
        problems.add("no concurrency limit '" + policy + "' (the policies file's concurrency"
            + " section has " + new TreeSet<>(concurrencyLimits) + ")");
      }
    } else {
      JsonNode ls = root.get("limits");
      if (!ls.isArray() || ls.isEmpty()) {
        problems.add("'limits' must be a non-empty array of limits such as {\"algorithm\":"
            + " \"leaky-bucket\", \"capacity\": 10, \"rate\": \"10/s\"}");
      } else {
        for (int i = 0; i < ls.size(); i++) {
          Limit l = limit(ls.get(i), "limits[" + i + "]", policy, problems);
          if (l != null) {
            limits.add(l);
          }
        }
      }
      if (policy != null && !policies.get().contains(policy)) {
        problems.add("no policy '" + policy + "' (the policies file has "
            + new TreeSet<>(policies.get()) + ")");
      }
    }
    Quota quota = null;
    if (problems.isEmpty()) {
      try {
        quota = new Quota(policy, key, prefix, limits, concurrency, expires, reason);
      } catch (IllegalArgumentException e) {
        problems.add(e.getMessage());
      }
    }
    if (!problems.isEmpty()) {
      throw new Refusal(400, Problem.HTTP, "the quota was not set: " + String.join("; ",
          problems));
    }
    long version;
    try {
      version = store.put(quota, who);
    } catch (IllegalStateException e) {
      throw new Refusal(409, Problem.HTTP, e.getMessage());
    }
    quotas.refresh();   // this instance at once; the others within their refresh
    Quota set = quota;
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeNumberField("version", version);
      g.writeFieldName("quota");
      write(g, set);
      g.writeEndObject();
    });
  }

  /** One limit as the policies file writes it, checked by the same reader. */
  private Limit limit(JsonNode n, String at, String policy, List<String> problems) {
    if (!n.isObject()) {
      problems.add(at + " must be an object such as {\"algorithm\": \"leaky-bucket\","
          + " \"capacity\": 10, \"rate\": \"10/s\"}");
      return null;
    }
    Map<String, String> fields = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!LimitSpec.FIELDS.contains(e.getKey())) {
        problems.add(at + ": unknown field '" + e.getKey() + "' (expected "
            + new TreeSet<>(LimitSpec.FIELDS) + ")");
        continue;
      }
      fields.put(e.getKey(), e.getValue().asText());
    }
    return LimitSpec.parse(fields, policy == null ? "quota" : policy, ticksPerSecond,
        (field, message) -> problems.add(at + ": " + message));
  }

  private static String text(JsonNode root, String field, List<String> problems,
      boolean required) {
    JsonNode v = root.get(field);
    if (v == null) {
      if (required) {
        problems.add("'" + field + "' is missing");
      }
      return null;
    }
    if (!v.isTextual() || (required && v.asText().isEmpty())) {
      problems.add("'" + field + "' must be a " + (required ? "non-empty " : "") + "string but"
          + " was " + v);
      return null;
    }
    return v.asText();
  }

  private void remove(Exchange x, Fields q) throws Refusal {
    String policy = q.getValue("policy");
    String key = q.getValue("key");
    String who = q.getValue("who");
    if (policy == null || key == null || who == null) {
      throw new Refusal(400, Problem.HTTP, "name the quota and yourself: ?policy=NAME&key=KEY"
          + "&who=NAME (and prefix=true for a prefix quota, reason=TEXT)");
    }
    String reason = q.getValue("reason") == null ? "" : q.getValue("reason");
    boolean prefix = "true".equals(q.getValue("prefix"));
    long before = store.version();
    long version = store.remove(policy, key, prefix, who, reason);
    quotas.refresh();
    if (version == before) {
      throw new Refusal(404, Problem.HTTP, "no quota for " + (prefix ? "prefix '" : "key '") + key
          + "' of '" + policy + "'");
    }
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeNumberField("version", version);
      g.writeBooleanField("removed", true);
      g.writeEndObject();
    });
  }

  private void audit(Exchange x, Fields q) throws Refusal {
    int n = 50;
    String nText = q.getValue("n");
    if (nText != null) {
      try {
        n = Integer.parseInt(nText);
      } catch (NumberFormatException e) {
        n = -1;
      }
      if (n < 1 || n > 1000) {
        throw new Refusal(400, Problem.HTTP, "n must be a whole number from 1 to 1000 but was '"
            + nText + "'");
      }
    }
    List<QuotaChange> changes = store.audit(n);
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeArrayFieldStart("changes");
      for (QuotaChange c : changes) {
        write(g, c);
      }
      g.writeEndArray();
      g.writeEndObject();
    });
  }

  /** A limit in the fields the policies file (and {@code PUT /v1/quotas}) writes it with. */
  private static void write(JsonGenerator g, Limit l) throws IOException {
    g.writeStartObject();
    g.writeStringField("algorithm", l.algorithm().id());
    if (l.rate() != null) {
      g.writeNumberField("capacity", l.capacity());
      g.writeStringField("rate", l.rate().toString());
    } else {
      g.writeNumberField("limit", l.capacity());
      g.writeStringField("window", l.window().toMillis() + "ms");
    }
    if (!l.penalty().isZero()) {
      g.writeStringField("penalty", l.penalty().toMillis() + "ms");
    }
    g.writeStringField("name", l.name());
    g.writeEndObject();
  }

  /** One change of the audit trail. */
  static void write(JsonGenerator g, QuotaChange c) throws IOException {
    g.writeStartObject();
    g.writeNumberField("version", c.version());
    g.writeStringField("at", c.at().toString());
    g.writeStringField("who", c.who());
    if (c.before() != null) {
      g.writeFieldName("before");
      write(g, c.before());
    }
    if (c.after() != null) {
      g.writeFieldName("after");
      write(g, c.after());
    }
    g.writeStringField("reason", c.reason());
    g.writeEndObject();
  }
}

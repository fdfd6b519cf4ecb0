package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.Limit;
import dev.sluice.internal.QuotaFields;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
    g.writeObject(QuotaFields.toMap(q));
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
    @SuppressWarnings("unchecked")
    Map<String, Object> fields = json.convertValue(root, Map.class);
    Quota quota = QuotaFields.parse(fields, policies.get(), concurrencyLimits, ticksPerSecond,
        problems);
    if (quota == null) {
      throw new Refusal(400, Problem.HTTP, "the quota was not set: " + String.join("; ",
          problems));
    }
    String who = (String) fields.get("who");
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

  /** One change of the audit trail. */
  static void write(JsonGenerator g, QuotaChange c) throws IOException {
    g.writeObject(QuotaFields.toMap(c));
  }
}

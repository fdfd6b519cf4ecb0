package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.internal.StoreKeys;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The request codec of {@code /v1/check}: a body into checks (one, or a batch), every mistake a
 * {@link Refusal} naming the field; and a decision into its JSON answer.
 */
final class CheckCodec {
  /** Jackson's hints about its own settings ("(enable `JsonReadFeature...` to allow)"). */
  private static final Pattern JACKSON_HINT = Pattern.compile(
      "\\s*\\([^()]*(Feature|enable|disable)[^()]*\\)|[:;,]?\\s*(enable|disable) `[^`]*`[^(]*");

  /** What one entry of a check asks. */
  record Check(PolicyRegistry.Policy policy, String key, double cost, Mode mode) {}

  private final Options options;
  private final PolicyRegistry registry;
  private final ObjectMapper json;

  CheckCodec(Options options, PolicyRegistry registry, ObjectMapper json) {
    this.options = options;
    this.registry = registry;
    this.json = json;
  }

  /** The body as JSON, refused when it is not JSON or empty. */
  JsonNode read(byte[] body) throws Refusal {
    JsonNode root;
    try {
      root = json.readTree(body);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      throw new Refusal(Problem.MALFORMED_JSON, plain(e.getOriginalMessage())
          + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      throw new Refusal(Problem.MALFORMED_JSON, "the body is not JSON");
    }
    if (root == null || root.isMissingNode()) {
      throw new Refusal(Problem.MALFORMED_JSON, "the body is empty; send {\"policy\": ..., \"key\":"
          + " ...} or {\"requests\": [...]}");
    }
    return root;
  }

  /** Whether the body is a batch: an array, or an object with {@code requests}. */
  static boolean isBatch(JsonNode root) {
    return root.isArray() || (root.isObject() && root.has("requests"));
  }

  /** The checks of a batch, all valid, or the first problem. */
  List<Check> batch(JsonNode root) throws Refusal {
    JsonNode list = root.isArray() ? root : root.get("requests");
    if (root.isObject() && root.size() != 1) {
      throw new Refusal(Problem.INVALID_CHECK, "a batch is {\"requests\": [...]} with no other fields");
    }
    if (!list.isArray() || list.isEmpty()) {
      throw new Refusal(Problem.INVALID_CHECK, "'requests' must be a non-empty array");
    }
    if (list.size() > options.maxBatch) {
      throw new Refusal(Problem.BATCH_TOO_LARGE, "a batch holds at most " + options.maxBatch
          + " requests but this one has " + list.size());
    }
    List<Check> checks = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      checks.add(check(list.get(i), "requests[" + i + "]."));
    }
    return checks;
  }

  /** A parser's message in plain words: the first line, without hints about its settings. */
  static String plain(String message) {
    if (message == null) {
      return "not valid JSON";
    }
    String first = message.lines().findFirst().orElse("");
    return JACKSON_HINT.matcher(first).replaceAll("").trim();
  }

  /** One check, {@code where} naming its place in a batch for the error messages. */
  Check check(JsonNode n, String where) throws Refusal {
    if (!n.isObject()) {
      throw new Refusal(Problem.INVALID_CHECK, where.isEmpty() ? "the body must be a JSON object"
          : where.substring(0, where.length() - 1) + " must be a JSON object");
    }
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!f.equals("policy") && !f.equals("key") && !f.equals("cost") && !f.equals("mode")) {
        throw new Refusal(Problem.INVALID_CHECK, where + f + ": unknown field (expected policy,"
            + " key, cost, mode)");
      }
    }
    JsonNode p = n.get("policy");
    if (p == null || !p.isTextual()) {
      throw new Refusal(Problem.INVALID_CHECK, where + "policy: required, a string (one of "
          + registry.names() + ")");
    }
    PolicyRegistry.Policy policy = registry.get(p.asText());
    if (policy == null) {
      throw new Refusal(Problem.UNKNOWN_POLICY, where + "policy: no policy named '" + p.asText()
          + "' (known: " + String.join(", ", registry.names()) + ")");
    }
    JsonNode k = n.get("key");
    if (k == null || !k.isTextual() || k.asText().isEmpty()) {
      throw new Refusal(Problem.INVALID_CHECK, where + "key: required, a non-empty string");
    }
    if (k.asText().length() > options.maxKeyLength) {
      throw new Refusal(Problem.INVALID_CHECK, where + "key: at most " + options.maxKeyLength
          + " characters but has " + k.asText().length());
    }
    // the shared stores' rule, whatever the store, so switching stores changes no answer
    String keyProblem = StoreKeys.problem(k.asText());
    if (keyProblem != null) {
      throw new Refusal(Problem.INVALID_CHECK, where + "key: " + keyProblem);
    }
    double cost = 1;
    JsonNode c = n.get("cost");
    if (c != null) {
      if (!c.isNumber() || !Double.isFinite(c.asDouble()) || c.asDouble() <= 0) {
        throw new Refusal(Problem.INVALID_CHECK, where + "cost: must be a positive number but was " + c);
      }
      cost = c.asDouble();
    }
    Mode mode = Mode.ENFORCE;
    JsonNode m = n.get("mode");
    if (m != null) {
      mode = m.isTextual() ? Mode.of(m.asText()) : null;
      if (mode == null) {
        throw new Refusal(Problem.INVALID_CHECK, where + "mode: must be enforce, peek, fill-up or"
            + " reserve but was " + m);
      }
      if ((mode == Mode.RESERVE || mode == Mode.FILL_UP) && policy.groupSpec() != null) {
        throw new Refusal(Problem.INVALID_CHECK, where + "mode: policy '" + policy.name()
            + "' is a group, which answers enforce and peek only");
      }
      if (mode == Mode.RESERVE) {
        for (Limit l : policy.limits()) {
          if (!l.algorithm().isBucket()) {
            throw new Refusal(Problem.INVALID_CHECK, where + "mode: reserve needs bucket limits but"
                + " policy '" + policy.name() + "' has " + l.name());
          }
        }
      }
    }
    return new Check(policy, k.asText(), cost, mode);
  }

  /** Writes one decision as the service answers it (inside a problem document when refused). */
  static void result(JsonGenerator g, Check c, Decision d, Map<String, String> headers,
      Problem problem, int status, String detail) throws IOException {
    g.writeStartObject();
    if (problem != null) {
      problem.write(g, status, detail);
    }
    g.writeStringField("policy", c.policy().name());
    g.writeStringField("key", c.key());
    g.writeStringField("mode", c.mode().wire);
    g.writeBooleanField("allowed", d.isAllowed());
    if (c.mode() == Mode.FILL_UP) {
      g.writeBooleanField("reachedCapacity", d.reachedCapacity());
    }
    if (!d.isDegraded()) {
      g.writeNumberField("remaining", d.remaining());
    }
    g.writeNumberField("retryAfterSeconds", d.retryAfterNanos() == Long.MAX_VALUE ? -1 : d.retryAfterNanos() / 1e9);
    if (!d.isDegraded()) {
      g.writeNumberField("resetAfterSeconds", d.resetAfterNanos() / 1e9);
    }
    g.writeNumberField("delaySeconds", d.delayNanos() / 1e9);
    g.writeStringField("limit", d.limit().name());
    if (d.isDegraded()) {
      g.writeBooleanField("degraded", true);
    }
    if (d.isLeased()) {
      g.writeBooleanField("leased", true);
    }
    if (d.isBorrowed()) {
      g.writeBooleanField("borrowed", true);
    }
    if (d.isNeverAdmissible()) {
      g.writeBooleanField("neverAdmissible", true);
    }
    g.writeObjectFieldStart("headers");
    for (Map.Entry<String, String> h : headers.entrySet()) {
      g.writeStringField(h.getKey(), h.getValue());
    }
    g.writeEndObject();
    g.writeEndObject();
  }
}

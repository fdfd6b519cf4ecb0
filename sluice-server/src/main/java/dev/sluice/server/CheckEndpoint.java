package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.Decision;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.RateLimitHeaders;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/check}: reads the body ({@link BodyReader}), decides each check against its
 * policy's limiter, counts it ({@link Metrics}) and renders the answer: 200 with the decision,
 * 429 (or 503 for a store that fails closed) as a problem document whose extension members are
 * the decision, or 200 with a batch's results.
 */
final class CheckEndpoint {
  private static final System.Logger LOG = System.getLogger(CheckEndpoint.class.getName());

  private final CheckCodec codec;
  private final BodyReader bodies;
  private final Responses responses;
  private final Metrics metrics;
  private final int maxBodyBytes;
  /** The service's own health shedder ({@code Options.shedCpu}), or null. */
  private final HealthShedder health;

  CheckEndpoint(CheckCodec codec, BodyReader bodies, Responses responses, Metrics metrics,
      int maxBodyBytes, HealthShedder health) {
    this.codec = codec;
    this.bodies = bodies;
    this.responses = responses;
    this.metrics = metrics;
    this.maxBodyBytes = maxBodyBytes;
    this.health = health;
  }

  /**
   * Sheds by the service's own health first (a fast 503, the body unread), then reads the body
   * without holding a thread and decides; 413 for a body that is too large.
   */
  void handle(Exchange x) throws Refusal {
    long length = x.request.getLength();
    if (length > maxBodyBytes) {
      throw new Refusal(413, Problem.HTTP, "the body is " + length + " bytes; at most "
          + maxBodyBytes + " are accepted");
    }
    HealthShedder.Verdict verdict = Router.admit(health, x);
    bodies.read(x, maxBodyBytes, (body, failure) -> {
      try {
        if (failure instanceof BodyReader.TooLarge) {
          throw new Refusal(413, Problem.HTTP, "the body is more than " + maxBodyBytes + " bytes");
        } else if (failure != null) {
          throw new Refusal(400, Problem.HTTP, "the body could not be read: " + failure.getMessage());
        }
        decide(x, body);
      } catch (Refusal r) {
        Router.refuse(responses, x, r, failure != null);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "unexpected failure on POST /v1/check", e);
        responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
      } finally {
        if (verdict != null) {
          verdict.end();
        }
      }
    });
  }


  private void decide(Exchange x, byte[] body) throws Refusal {
    JsonNode root = codec.read(body);
    if (!CheckCodec.isBatch(root)) {
      CheckCodec.Check c = codec.check(root, "");
      Decision d = decide(c);
      Map<String, String> headers = RateLimitHeaders.of(d, RateLimitHeaders.Mode.IETF);
      for (Map.Entry<String, String> h : headers.entrySet()) {
        x.response.getHeaders().put(h.getKey(), h.getValue());
      }
      if (d.isAllowed()) {
        responses.json(x, 200, "application/json", g -> CheckCodec.result(g, c, d, headers, null, 0, null));
      } else {
        // a refusal is a problem document whose extension members are the decision
        Problem p = d.isUnavailable() ? Problem.STORE_UNAVAILABLE : Problem.RATE_LIMITED;
        String detail = d.isUnavailable() ? "the shared store does not answer and the policy '"
            + c.policy().name() + "' fails closed" : d.isNeverAdmissible()
            ? "a cost of " + c.cost() + " never fits limit '" + d.limit().name() + "'"
            : "limit '" + d.limit().name() + "' of policy '" + c.policy().name() + "' is full for key '"
                + c.key() + "'";
        responses.json(x, p.status, Problem.MEDIA_TYPE,
            g -> CheckCodec.result(g, c, d, headers, p, p.status, detail));
      }
      return;
    }
    List<CheckCodec.Check> checks = codec.batch(root);
    List<Decision> decisions = new ArrayList<>(checks.size());
    for (CheckCodec.Check c : checks) {
      decisions.add(decide(c));
    }
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeArrayFieldStart("results");
      for (int i = 0; i < checks.size(); i++) {
        Decision d = decisions.get(i);
        CheckCodec.result(g, checks.get(i), d, RateLimitHeaders.of(d, RateLimitHeaders.Mode.IETF),
            null, 0, null);
      }
      g.writeEndArray();
      g.writeEndObject();
    });
  }

  private Decision decide(CheckCodec.Check c) throws Refusal {
    long start = System.nanoTime();
    Decision d;
    try {
      d = switch (c.mode()) {
        case PEEK -> c.policy().limiter().check(c.key(), c.cost());
        case FILL_UP -> c.policy().limiter().fillUp(c.key(), c.cost());
        case RESERVE -> c.policy().limiter().reserve(c.key(), c.cost());
        case ENFORCE -> c.policy().limiter().tryAcquire(c.key(), c.cost());
      };
    } catch (IllegalArgumentException e) {
      throw new Refusal(Problem.INVALID_CHECK, e.getMessage());
    }
    String outcome = d.isAllowed() ? "allowed" : d.isUnavailable() ? "unavailable" : "rejected";
    metrics.decision(c.policy().name(), outcome, System.nanoTime() - start);
    if (outcome.equals("rejected") && c.mode() != Mode.PEEK) {
      metrics.refused(c.policy().name(), c.key());
    }
    return d;
  }
}

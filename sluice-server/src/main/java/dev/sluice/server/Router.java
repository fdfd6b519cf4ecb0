package dev.sluice.server;

import dev.sluice.TopKeys;
import dev.sluice.health.HealthShedder;
import dev.sluice.internal.FilterPolicy;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.util.Callback;

/**
 * The service's endpoints: {@code POST /v1/check} and {@code /v1/permits} (after the bearer
 * token, when one is set), {@code /healthz}, {@code /readyz} and {@code /metrics}, and with an
 * admin token {@code GET /v1/top-refused}, {@code /v1/quotas}, {@code GET /v1/console} and the
 * console's page ({@code /console}, its assets open, its data behind the admin token); 404 and
 * 405 as problem documents.
 */
final class Router extends Handler.Abstract {
  private static final System.Logger LOG = System.getLogger(Router.class.getName());

  private final BodyReader bodies;
  private final CheckEndpoint check;
  private final PermitEndpoint permits;
  private final Responses responses;
  /** {@code Authorization} expected on /v1/, as bytes; null when no token is set. */
  private final byte[] token;
  /** {@code Authorization} the admin API expects, as bytes; null when it is off. */
  private final byte[] adminToken;
  private final Metrics refusals;
  private final QuotaEndpoint quotas;
  private final Console console;
  /** Why the service is not ready, or null when it is. */
  private final Supplier<String> notReady;
  private final Supplier<String> metrics;

  Router(BodyReader bodies, CheckEndpoint check, PermitEndpoint permits, Responses responses,
      String token, String adminToken, Metrics refusals, QuotaEndpoint quotas, Console console,
      Supplier<String> notReady, Supplier<String> metrics) {
    this.quotas = quotas;
    this.console = console;
    this.bodies = bodies;
    this.check = check;
    this.permits = permits;
    this.responses = responses;
    this.token = token == null ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    this.adminToken = adminToken == null ? null
        : ("Bearer " + adminToken).getBytes(StandardCharsets.UTF_8);
    this.refusals = refusals;
    this.notReady = notReady;
    this.metrics = metrics;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    Exchange x = bodies.exchange(request, response, callback);
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    try {
      switch (path) {
        case "/v1/check" -> {
          if (!method.equals("POST")) {
            response.getHeaders().put(HttpHeader.ALLOW, "POST");
            throw new Refusal(405, Problem.HTTP, "use POST for /v1/check");
          }
          authenticate(request);
          check.handle(x);
        }
        case "/healthz" -> responses.text(x, 200, "ok\n", "text/plain; charset=utf-8");
        case "/readyz" -> {
          String why = notReady.get();
          responses.text(x, why == null ? 200 : 503, why == null ? "ready\n" : why + "\n",
              "text/plain; charset=utf-8");
        }
        case "/metrics" -> responses.text(x, 200, metrics.get(),
            "text/plain; version=0.0.4; charset=utf-8");
        case "/v1/top-refused" -> {
          admin(request, "/v1/top-refused");
          get(response, method, path);
          topRefused(x, request);
        }
        case "/v1/console" -> {
          admin(request, "/v1/console");
          get(response, method, path);
          console.snapshot(x);
        }
        default -> {
          String asset = Console.asset(path);
          if (asset != null || path.equals("/console")) {
            if (adminToken == null) {
              throw new Refusal(404, Problem.HTTP, "no console: start the service with"
                  + " --admin-token-file (or SLUICE_ADMIN_TOKEN) to use /console");
            }
            get(response, method, path);
            if (asset == null) {   // the page's assets are relative to /console/
              response.getHeaders().put(HttpHeader.LOCATION, "/console/");
              responses.text(x, 302, "/console/\n", "text/plain; charset=utf-8");
            } else {
              console.asset(x, asset);
            }
            break;
          }
          if (path.startsWith("/v1/quotas")) {
            admin(request, "/v1/quotas");
            if (quotas.handle(x, request, method, path)) {
              break;
            }
          }
          if (path.startsWith("/v1/permits")) {
            authenticate(request);
            if (permits.handle(x, method, path)) {
              break;
            }
          }
          throw new Refusal(404, Problem.HTTP, "no such endpoint: " + path
              + " (POST /v1/check, POST /v1/permits, POST /v1/permits/<id>/renew,"
              + " DELETE /v1/permits/<id>, GET /healthz, /readyz, /metrics)");
        }
      }
    } catch (Refusal r) {
      refuse(responses, x, r, true);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure on " + method + " " + path, e);
      responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
    }
    return true;
  }

  /**
   * Asks the service's own health shedder ({@code --shed-cpu}) about a request that would take
   * work (a check, a permit's acquisition) at the priority its {@code X-Priority} header names:
   * the admission to end when its answer is made, or null without a shedder.
   *
   * @throws Refusal 503 {@code urn:sluice:problem:shedding}, {@code Retry-After: 1}, naming the
   *     signal, when it is shed
   */
  static HealthShedder.Verdict admit(HealthShedder health, Exchange x) throws Refusal {
    if (health == null) {
      return null;
    }
    HealthShedder.Verdict verdict =
        health.admit(FilterPolicy.priorityNamed(x.request.getHeaders().get("X-Priority")));
    if (!verdict.admitted()) {
      x.response.getHeaders().put("Retry-After", "1");
      throw new Refusal(Problem.SHEDDING, "shedding load: " + verdict.reason());
    }
    return verdict;
  }

  /**
   * Answers a refusal as a problem document; one made before the body was read (401, 404, 405,
   * 413) also closes the connection, which the unread body has made unusable.
   */
  static void refuse(Responses responses, Exchange x, Refusal r, boolean bodyUnread) {
    if (bodyUnread && r.status != 400) {
      x.response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
    responses.problem(x, r.status, r.problem, r.getMessage());
  }

  /** 405 for anything but GET. */
  private static void get(Response response, String method, String path) throws Refusal {
    if (!method.equals("GET")) {
      response.getHeaders().put(HttpHeader.ALLOW, "GET");
      throw new Refusal(405, Problem.HTTP, "use GET for " + path);
    }
  }

  /** The admin API: 404 when it is off, 401 without the admin token. */
  private void admin(Request request, String what) throws Refusal {
    if (adminToken == null) {
      throw new Refusal(404, Problem.HTTP, "no admin API: start the service with"
          + " --admin-token-file (or SLUICE_ADMIN_TOKEN) to use " + what);
    }
    authenticate(request, adminToken, "the admin API needs 'Authorization: Bearer"
        + " <admin token>'");
  }

  private void authenticate(Request request) throws Refusal {
    authenticate(request, token, "this service needs 'Authorization: Bearer <token>'");
  }

  private static void authenticate(Request request, byte[] expected, String why)
      throws Refusal {
    if (expected == null) {
      return;
    }
    String given = request.getHeaders().get(HttpHeader.AUTHORIZATION);
    if (given == null || !MessageDigest.isEqual(expected,
        given.getBytes(StandardCharsets.UTF_8))) {
      throw new Refusal(401, Problem.HTTP, why);
    }
  }

  /**
   * {@code GET /v1/top-refused?policy=NAME} (or {@code limit=NAME}, a concurrency limit) and
   * {@code n} (1 to 256, default 10): the keys refused most in the last minutes, from a bounded
   * sketch ({@link TopKeys}); an empty list before a first refusal.
   */
  private void topRefused(Exchange x, Request request) throws Refusal {
    Fields q = Request.extractQueryParameters(request);
    String policy = q.getValue("policy");
    String limit = q.getValue("limit");
    if ((policy == null) == (limit == null)) {
      throw new Refusal(400, Problem.HTTP, "name one policy (?policy=NAME) or one concurrency"
          + " limit (?limit=NAME)");
    }
    String nText = q.getValue("n");
    int n = 10;
    if (nText != null) {
      try {
        n = Integer.parseInt(nText);
      } catch (NumberFormatException e) {
        n = -1;
      }
      if (n < 1 || n > Metrics.TOP_KEYS) {
        throw new Refusal(400, Problem.HTTP, "n must be a whole number from 1 to "
            + Metrics.TOP_KEYS + " but was '" + nText + "'");
      }
    }
    TopKeys sketch = refusals.topRefused(policy != null ? policy : limit, limit != null);
    List<TopKeys.Entry> top = sketch == null ? List.of() : sketch.top(n);
    double total = sketch == null ? 0 : sketch.total();
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeStringField(policy != null ? "policy" : "limit", policy != null ? policy : limit);
      g.writeNumberField("memorySeconds", Metrics.TOP_MEMORY.toSeconds());
      g.writeNumberField("total", total);
      g.writeArrayFieldStart("top");
      for (TopKeys.Entry e : top) {
        g.writeStartObject();
        g.writeStringField("key", e.key());
        g.writeNumberField("count", e.count());
        g.writeNumberField("error", e.error());
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    });
  }
}

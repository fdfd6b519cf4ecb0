package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.CircuitBreakerSettings;
import dev.sluice.StoreFailure;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.quota.Quotas;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.internal.ConcurrencyAnswers;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.PermitStore;
import dev.sluice.internal.PrefixedPermitStore;
import dev.sluice.internal.StoreKeys;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The concurrency limits of the policies file's {@code concurrency:} section over HTTP:
 * {@code POST /v1/permits} acquires a permit (200 with its id, or 429/503 as a problem document
 * saying why), {@code POST /v1/permits/<id>/renew} extends its lease, and
 * {@code DELETE /v1/permits/<id>} releases it (with {@code ?outcome=success|dropped|ignored}).
 * An id that is unknown, released or whose lease ended is a {@code 404} problem document, never
 * an error page. Ids cannot be guessed: 128 random bits in memory; on a shared store, a
 * {@link SharedPermitId} that any instance on the store can renew or release. The permits held
 * here are bounded ({@code --max-permits}); a permit whose lease ended is forgotten at the next
 * sweep.
 */
final class PermitEndpoint {
  private static final System.Logger LOG = System.getLogger(PermitEndpoint.class.getName());
  private static final Set<String> FIELDS = Set.of("limit", "key", "flow", "weight", "priority",
      "waitMs");

  private final Map<String, ConcurrencyLimiter> limiters;
  private final BodyReader bodies;
  private final Responses responses;
  private final ObjectMapper json;
  private final int maxBodyBytes;
  private final long maxPermits;
  private final int maxKeyLength;
  private final ConcurrentHashMap<String, Permit> held = new ConcurrentHashMap<>();
  private final AtomicLong heldCount = new AtomicLong();
  private final SecureRandom random = new SecureRandom();
  /** Forgets ended permits every second; null when there is no concurrency limit. */
  private final ScheduledExecutorService sweeper;
  /** Per limit, the keys most recently asked for (at most METERED_KEYS): their limits are metered. */
  private final Map<String, RecentKeys> recent = new ConcurrentHashMap<>();
  /** How many keys of each limit {@code /metrics} gives the limit of (a bounded set of series). */
  static final int METERED_KEYS = 20;

  /** The service's own health shedder ({@code Options.shedCpu}), or null. */
  private final HealthShedder health;
  /** Where refusals are counted by key (the admin API's top refused keys). */
  private final Metrics metrics;

  PermitEndpoint(Map<String, ConcurrencyLimiter> limiters, BodyReader bodies, Responses responses,
      ObjectMapper json, int maxBodyBytes, long maxPermits, int maxKeyLength,
      HealthShedder health, Metrics metrics) {
    this.limiters = limiters;
    this.metrics = metrics;
    this.health = health;
    this.bodies = bodies;
    this.responses = responses;
    this.json = json;
    this.maxBodyBytes = maxBodyBytes;
    this.maxPermits = maxPermits;
    this.maxKeyLength = maxKeyLength;
    if (limiters.isEmpty()) {
      this.sweeper = null;
    } else {
      this.sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-permit-sweep");
        t.setDaemon(true);
        return t;
      });
      // a sweep that throws would end the schedule: each failure waits for the next sweep
      var unused = sweeper.scheduleWithFixedDelay(() -> {
        try {
          sweep();
        } catch (RuntimeException e) {
          // a permit that could not be forgotten now is found again in a second
        }
      }, 1, 1, TimeUnit.SECONDS);
    }
  }

  /** The concurrency limiters of a policies file, on the shared store when it holds permits. */
  static Map<String, ConcurrencyLimiter> limiters(Policies policies, DecisionStore store,
      StoreFailure failure, CircuitBreakerSettings breaker) {
    return limiters(policies, store, failure, breaker, null);
  }

  /**
   * The concurrency limiters of the policies file; a fixed limit's keys take their quota's limit
   * when {@code quotas} has one (on a store at each acquisition, in memory when a key is first
   * seen).
   */
  static Map<String, ConcurrencyLimiter> limiters(Policies policies, DecisionStore store,
      StoreFailure failure, CircuitBreakerSettings breaker, Quotas quotas) {
    Map<String, ConcurrencyLimiter> out = new LinkedHashMap<>();
    policies.concurrency().forEach((name, spec) -> {
      ConcurrencyLimiter.Builder b = spec.builder();
      if (quotas != null && spec.adaptive().equals("none") && spec.group() == null
          && spec.limit() > 0) {
        int limit = spec.limit();
        b.limit(key -> quotas.concurrencyLimit(name, key, limit));
      }
      if (store instanceof PermitStore permits) {
        b.store(new PrefixedPermitStore(permits, "permits:" + name)).circuitBreaker(breaker)
            .onStoreFailure(failure == StoreFailure.LOCAL_SHARE ? StoreFailure.FAIL_CLOSED
                : failure);
      }
      out.put(name, b.build());
    });
    return Collections.unmodifiableMap(out);
  }

  /** Stops the sweep and closes the limiters (their waiters are refused). */
  void close() {
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
    limiters.values().forEach(ConcurrencyLimiter::close);
  }

  /** Routes {@code /v1/permits...}; false when the path is not one of this endpoint's. */
  boolean handle(Exchange x, String method, String path) throws Refusal {
    if (path.equals("/v1/permits")) {
      if (!method.equals("POST")) {
        x.response.getHeaders().put("Allow", "POST");
        throw new Refusal(405, Problem.HTTP, "use POST for /v1/permits");
      }
      acquire(x);
      return true;
    }
    if (!path.startsWith("/v1/permits/")) {
      return false;
    }
    String rest = path.substring("/v1/permits/".length());
    if (rest.endsWith("/renew")) {
      if (!method.equals("POST")) {
        x.response.getHeaders().put("Allow", "POST");
        throw new Refusal(405, Problem.HTTP, "use POST for /v1/permits/<id>/renew");
      }
      renew(x, rest.substring(0, rest.length() - "/renew".length()));
      return true;
    }
    if (!method.equals("DELETE")) {
      x.response.getHeaders().put("Allow", "DELETE");
      throw new Refusal(405, Problem.HTTP, "use DELETE for /v1/permits/<id> (a release)");
    }
    release(x, rest, x.request.getHttpURI().getQuery());
    return true;
  }

  /**
   * Sheds by the service's own health first (a fast 503, the body unread; renewals and releases
   * are never shed: they keep or free what is held), then reads the body and acquires.
   */
  private void acquire(Exchange x) throws Refusal {
    if (x.request.getLength() > maxBodyBytes) {
      throw new Refusal(413, Problem.HTTP, "the body is " + x.request.getLength()
          + " bytes; at most " + maxBodyBytes + " are accepted");
    }
    HealthShedder.Verdict verdict = Router.admit(health, x);
    bodies.read(x, maxBodyBytes, (body, failure) -> {
      try {
        if (failure instanceof BodyReader.TooLarge) {
          throw new Refusal(413, Problem.HTTP, "the body is more than " + maxBodyBytes + " bytes");
        } else if (failure != null) {
          throw new Refusal(400, Problem.HTTP, "the body could not be read: "
              + failure.getMessage());
        }
        acquire(x, body);
      } catch (Refusal r) {
        Router.refuse(responses, x, r, failure != null);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "unexpected failure on POST /v1/permits", e);
        responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
      } finally {
        if (verdict != null) {
          verdict.end();
        }
      }
    });
  }

  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void acquire(Exchange x, byte[] body) throws Refusal {
    JsonNode root;
    try {
      root = json.readTree(body);
    } catch (Exception e) {
      throw new Refusal(Problem.MALFORMED_JSON, "the body is not JSON: send {\"limit\": ...,"
          + " \"key\": ...}");
    }
    if (root == null || !root.isObject()) {
      throw new Refusal(Problem.MALFORMED_JSON, "the body must be a JSON object such as"
          + " {\"limit\": \"db\", \"key\": \"orders\"}");
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "unknown field '" + f + "' (expected "
            + new TreeSet<>(FIELDS) + ")");
      }
    }
    String name = text(root, "limit");
    ConcurrencyLimiter limiter = limiters.get(name);
    if (limiter == null) {
      throw new Refusal(Problem.UNKNOWN_LIMIT, "no concurrency limit '" + name + "' (the"
          + " policies file's concurrency section has " + new TreeSet<>(limiters.keySet()) + ")");
    }
    String key = text(root, "key");
    if (key.length() > maxKeyLength || StoreKeys.problem(key) != null) {
      throw new Refusal(Problem.INVALID_PERMIT_REQUEST, key.length() > maxKeyLength
          ? "'key' is longer than " + maxKeyLength + " characters" : "'key' "
          + StoreKeys.problem(key));
    }
    String flow = root.has("flow") ? text(root, "flow") : null;
    if (flow != null && flow.length() > maxKeyLength) {
      throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "'flow' is longer than " + maxKeyLength
          + " characters");
    }
    int weight = root.has("weight") ? whole(root, "weight", 1, Integer.MAX_VALUE) : 1;
    long waitMs = root.has("waitMs") ? whole(root, "waitMs", 0, 60_000) : 0;
    Priority priority = Priority.NORMAL;
    if (root.has("priority")) {
      String p = text(root, "priority");
      try {
        priority = Priority.valueOf(p.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "'priority' must be critical, normal"
            + " or sheddable but was '" + p + "'");
      }
    }
    if (!reserveSlot()) {
      sweep();
      if (!reserveSlot()) {
        throw new Refusal(503, Problem.HTTP, "the service holds its maximum of " + maxPermits
            + " permits");
      }
    }
    CompletableFuture<Acquisition> asked;
    try {
      asked = limiter.acquireAsync(key, flow, weight, priority, Duration.ofMillis(waitMs));
    } catch (IllegalArgumentException e) {   // a key its limit cannot place (a group's prefix)
      heldCount.decrementAndGet();
      throw new Refusal(Problem.INVALID_PERMIT_REQUEST, e.getMessage());
    }
    // a client that goes away while it waits: its wait ends (a permit granted to the cancelled
    // wait is released at once)
    x.request.addFailureListener(gone -> asked.cancel(false));
    asked.whenComplete((a, failure) -> {
      if (failure instanceof CancellationException) {
        heldCount.decrementAndGet();
        return;
      }
      if (failure != null) {
        heldCount.decrementAndGet();
        LOG.log(System.Logger.Level.ERROR, "unexpected failure acquiring a permit", failure);
        responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
      } else {
        answer(x, name, key, a);
      }
    });
  }

  /** Counts one more permit id held, unless the bound is reached (exactly, whatever the threads). */
  private boolean reserveSlot() {
    for (long n = heldCount.get(); n < maxPermits; n = heldCount.get()) {
      if (heldCount.compareAndSet(n, n + 1)) {
        return true;
      }
    }
    return false;
  }

  /** Answers an acquisition whose id slot was reserved: kept when acquired, given back if not. */
  private void answer(Exchange x, String name, String key, Acquisition a) {
    recent.computeIfAbsent(name, n -> new RecentKeys()).touch(key);
    if (a.isAcquired()) {
      Permit permit = a.permit();
      String id = permit.sharedId() == null ? newId()
          : SharedPermitId.of(name, key, permit.weight(), permit.sharedId());
      held.put(id, permit);
      long leaseMillis = Math.max(0, (permit.expiresAtNanos() - permit.acquiredAtNanos())
          / 1_000_000);
      // a permit whose answer does not reach its client (it went away while waiting, or the
      // request's own deadline answered first) is held by nobody: it goes back at once
      Runnable undelivered = () -> {
        if (held.remove(id, permit)) {
          permit.release(Outcome.IGNORED);   // the weight first, then the id's slot
          heldCount.decrementAndGet();
        }
      };
      responses.json(x, 200, "application/json", g -> {
        g.writeStartObject();
        g.writeStringField("limit", name);
        g.writeStringField("key", key);
        g.writeBooleanField("acquired", true);
        g.writeStringField("permit", id);
        g.writeNumberField("weight", permit.weight());
        g.writeNumberField("inFlight", a.inFlight());
        g.writeNumberField("max", a.limit());
        g.writeNumberField("leaseMs", leaseMillis);
        if (a.isBorrowed()) {
          g.writeBooleanField("borrowed", true);
        }
        g.writeEndObject();
      }, undelivered);
      return;
    }
    heldCount.decrementAndGet();
    var why = a.refusal();
    metrics.refusedPermit(name, key);
    boolean unavailable = ConcurrencyAnswers.problem(a, ConcurrencyScope.CLIENT).status() == 503;
    Problem p = unavailable ? Problem.STORE_UNAVAILABLE : Problem.NO_PERMIT;
    String detail = ConcurrencyAnswers.problem(a, ConcurrencyScope.CLIENT, name).detail();
    x.response.getHeaders().put("Retry-After", "1");
    responses.json(x, p.status, Problem.MEDIA_TYPE, g -> {
      g.writeStartObject();
      p.write(g, p.status, detail);
      g.writeStringField("limit", name);
      g.writeStringField("key", key);
      g.writeBooleanField("acquired", false);
      g.writeStringField("reason", why.name().toLowerCase(Locale.ROOT));
      g.writeNumberField("inFlight", a.inFlight());
      g.writeNumberField("max", a.limit());
      g.writeEndObject();
    });
  }

  private void renew(Exchange x, String id) throws Refusal {
    Permit p = held.get(id);
    boolean here = p != null;
    if (p == null) {
      p = shared(id);   // granted by another instance on the same store
    }
    if (p == null || !p.renew()) {
      if (here) {
        forget(id, p);
      }
      throw new Refusal(Problem.UNKNOWN_PERMIT, "no permit '" + shown(id) + "' is in flight:"
          + " it was released, its lease ended, or it never was");
    }
    long leaseMillis = Math.max(0, (p.expiresAtNanos() - System.nanoTime()) / 1_000_000);
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeStringField("permit", id);
      g.writeBooleanField("renewed", true);
      g.writeNumberField("leaseMs", leaseMillis);
      g.writeEndObject();
    });
  }

  private void release(Exchange x, String id, String query) throws Refusal {
    Outcome outcome = Outcome.SUCCESS;
    if (query != null && !query.isEmpty()) {
      if (!query.startsWith("outcome=")) {
        throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "the only query parameter is"
            + " outcome=success|dropped|ignored but was '" + shown(query) + "'");
      }
      String o = query.substring("outcome=".length());
      outcome = switch (o.toLowerCase(Locale.ROOT)) {
        case "success" -> Outcome.SUCCESS;
        case "dropped" -> Outcome.DROPPED;
        case "ignored" -> Outcome.IGNORED;
        default -> throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "outcome must be success,"
            + " dropped or ignored but was '" + shown(o) + "'");
      };
    }
    Permit p = held.remove(id);
    if (p != null) {
      heldCount.decrementAndGet();
    } else {
      p = shared(id);   // granted by another instance on the same store
    }
    if (p == null || !p.release(outcome)) {
      throw new Refusal(Problem.UNKNOWN_PERMIT, "no permit '" + shown(id) + "' is in flight:"
          + " it was released, its lease ended, or it never was");
    }
    responses.json(x, 200, "application/json", g -> {
      g.writeStartObject();
      g.writeStringField("permit", id);
      g.writeBooleanField("released", true);
      g.writeEndObject();
    });
  }

  /**
   * The permit a shared id names (one this or another instance granted on the shared store), or
   * null if the id names none: not a shared id, an unknown limit, or a key or weight no permit can
   * have. Whether the store holds it is the store's to say, on renew or release.
   */
  private Permit shared(String id) {
    SharedPermitId s = SharedPermitId.parse(id);
    if (s == null) {
      return null;
    }
    ConcurrencyLimiter limiter = limiters.get(s.limit());
    if (limiter == null) {
      return null;
    }
    try {
      return limiter.sharedPermit(s.key(), s.sharedId(), s.weight());
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      return null;
    }
  }

  private void forget(String id, Permit p) {
    if (p != null && held.remove(id, p)) {
      heldCount.decrementAndGet();
    }
  }

  /** Forgets permits whose lease has ended (the limiter has let them go). */
  void sweep() {
    long now = System.nanoTime();
    held.forEach((id, p) -> {
      if (!p.isActive() || now - p.expiresAtNanos() >= 0) {
        forget(id, p);
      }
    });
  }

  /** Permits the service holds ids for now. */
  long held() {
    return heldCount.get();
  }

  /** The keys of a limit most recently asked for, least recent first (at most METERED_KEYS). */
  List<String> meteredKeys(String limit) {
    RecentKeys r = recent.get(limit);
    return r == null ? List.of() : r.keys();
  }

  /** The limiters' figures, in the Prometheus text format ({@link Metrics#concurrency}). */
  String render() {
    Map<String, List<String>> keys = new LinkedHashMap<>();
    recent.forEach((name, r) -> keys.put(name, r.keys()));
    return Metrics.concurrency(limiters, heldCount.get(), keys);
  }

  /** The last {@link #METERED_KEYS} keys asked for, least recent first. */
  private static final class RecentKeys {
    private final LinkedHashMap<String, Boolean> keys = new LinkedHashMap<>(32, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
        return size() > METERED_KEYS;
      }
    };

    synchronized void touch(String key) {
      keys.put(key, Boolean.TRUE);
    }

    synchronized List<String> keys() {
      return new ArrayList<>(keys.keySet());
    }
  }

  private String newId() {
    byte[] bytes = new byte[16];
    random.nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  private static String text(JsonNode root, String field) throws Refusal {
    JsonNode v = root.get(field);
    if (v == null || !v.isTextual() || v.asText().isEmpty()) {
      throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "'" + field + "' must be a non-empty"
          + " string" + (v == null ? " but is missing" : " but was " + v));
    }
    return v.asText();
  }

  private static int whole(JsonNode root, String field, int min, int max) throws Refusal {
    JsonNode v = root.get(field);
    if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < min || v.asInt() > max) {
      throw new Refusal(Problem.INVALID_PERMIT_REQUEST, "'" + field + "' must be a whole number"
          + " from " + min + " to " + max + " but was " + v);
    }
    return v.asInt();
  }

  private static String shown(String s) {
    return s.length() > 64 ? s.substring(0, 64) + "..." : s;
  }
}

package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.postgres.PostgresStore;
import dev.sluice.redis.RedisStore;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.StoreKeys;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The standalone rate-limit service: {@code POST /v1/check} decides requests against named
 * policies from a YAML file; {@code /healthz}, {@code /readyz}, {@code /metrics}. Limits live in
 * memory, or in Redis or PostgreSQL to share them across instances. See {@code docs/server.md}.
 */
public final class SluiceServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(SluiceServer.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  private static final String SAMPLE = "/dev/sluice/server/sample.yaml";
  private static final String PROBLEM = "application/problem+json";

  /** One policy as the service runs it. */
  private record Policy(String name, List<Limit> limits, RateLimiter limiter) {}

  /** What one entry of a check asks. */
  private record Check(Policy policy, String key, double cost, String mode) {}

  /** A request the service refuses, with its status and what to say. */
  private static final class Refusal extends Exception {
    private static final long serialVersionUID = 1L;
    final int status;
    final String title;

    Refusal(int status, String title, String detail) {
      super(detail, null, false, false);
      this.status = status;
      this.title = title;
    }
  }

  private final Options options;
  private final Server server;
  private final ServerConnector connector;
  private final GracefulHandler graceful;
  private final Metrics metrics = new Metrics();
  private final DecisionStore store;
  private final AutoCloseable storeResources;
  private final ScheduledExecutorService reloader;
  private final byte[] token;
  private volatile Map<String, Policy> policies;
  private volatile long configStamp;

  private SluiceServer(Options options) throws ConfigException {
    this.options = options;
    this.token = options.token == null ? null : ("Bearer " + options.token).getBytes(StandardCharsets.UTF_8);
    Policies initial = loadPolicies();
    this.configStamp = stamp();
    int stores = (options.redisUri != null ? 1 : 0) + (options.redisCluster != null ? 1 : 0)
        + (options.postgresUrl != null ? 1 : 0);
    if (stores > 1) {
      throw new IllegalArgumentException("choose one shared store: Redis, a Redis Cluster or"
          + " PostgreSQL");
    }
    if (options.redisUri != null || options.redisCluster != null) {
      RedisStore redis = (options.redisUri != null ? RedisStore.builder(options.redisUri)
          : RedisStore.clusterBuilder(options.redisCluster.toArray(new String[0])))
          .prefix("sluice:").build();
      this.store = redis;
      this.storeResources = redis;
    } else if (options.postgresUrl != null) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(options.postgresUrl);
      config.setMaximumPoolSize(options.postgresPoolSize);
      config.setPoolName("sluice-server");
      config.setConnectionTimeout(2_000);
      HikariDataSource ds = new HikariDataSource(config);
      PostgresStore pg;
      try {
        pg = PostgresStore.builder(ds).createIfMissing(true).pruneEvery(Duration.ofMinutes(1)).build();
      } catch (RuntimeException e) {
        ds.close();
        throw e;
      }
      this.store = pg;
      this.storeResources = () -> {
        pg.close();
        ds.close();
      };
    } else {
      this.store = null;
      this.storeResources = null;
    }
    this.policies = build(initial, Map.of());

    QueuedThreadPool threads = new QueuedThreadPool(options.maxThreads, 8);
    threads.setName("sluice-http");
    this.server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    this.connector = new ServerConnector(server, new HttpConnectionFactory(http));
    connector.setHost(options.host);
    connector.setPort(options.port);
    server.addConnector(connector);
    this.graceful = new GracefulHandler(new Handler.Abstract() {
      @Override
      public boolean handle(Request request, Response response, Callback callback) {
        serve(request, response, callback);
        return true;
      }
    });
    server.setHandler(graceful);
    server.setStopTimeout(options.shutdownGrace.toMillis());
    if (options.configFile != null && !options.reloadEvery.isZero()) {
      reloader = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-config-reload");
        t.setDaemon(true);
        return t;
      });
      long every = options.reloadEvery.toMillis();
      reloader.scheduleWithFixedDelay(this::reloadIfChanged, every, every, TimeUnit.MILLISECONDS);
    } else {
      reloader = null;
    }
  }

  /**
   * Validates the configuration, connects the store and starts listening.
   *
   * @throws ConfigException if the policies file is invalid (every problem as file:line)
   */
  public static SluiceServer start(Options options) throws Exception {
    SluiceServer s = new SluiceServer(options);
    try {
      s.server.start();
    } catch (Exception e) {
      s.close();
      throw new IOException("cannot listen on " + options.host + ":" + options.port + ": "
          + e.getMessage(), e);
    }
    return s;
  }

  /** The port it listens on (useful with port 0). */
  public int port() {
    return connector.getLocalPort();
  }

  /** The policy names now in force. */
  public List<String> policyNames() {
    return List.copyOf(policies.keySet());
  }

  /** Where the policies come from: the file, or the bundled sample. */
  public String configSource() {
    return options.configFile != null ? options.configFile.toString() : "the bundled sample config";
  }

  private Policies loadPolicies() throws ConfigException {
    if (options.configFile != null) {
      return Policies.load(options.configFile);
    }
    try (InputStream in = SluiceServer.class.getResourceAsStream(SAMPLE)) {
      return Policies.parse("sample.yaml", new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private long stamp() {
    if (options.configFile == null) {
      return 0;
    }
    try {
      return Files.getLastModifiedTime(options.configFile).toMillis() * 31 + Files.size(options.configFile);
    } catch (IOException e) {
      return -1;
    }
  }

  /** Limiters for new policies; a policy whose limits did not change keeps its limiter (and state). */
  private Map<String, Policy> build(Policies p, Map<String, Policy> old) {
    Map<String, Policy> out = new LinkedHashMap<>();
    for (Map.Entry<String, List<Limit>> e : p.all().entrySet()) {
      Policy before = old.get(e.getKey());
      if (before != null && before.limits.equals(e.getValue())) {
        out.put(e.getKey(), before);
        continue;
      }
      Sluice.Builder b = Sluice.builder().limits(e.getValue().toArray(new Limit[0]))
          .maximumKeys(options.maximumKeys);
      if (store != null) {
        b.store(new PrefixedStore(store, e.getKey())).onStoreFailure(options.storeFailure);
      }
      out.put(e.getKey(), new Policy(e.getKey(), e.getValue(), b.build()));
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  /**
   * Reads the file again now; on success the new policies apply to the next request, on failure
   * the old ones stay and the problems are thrown.
   */
  public void reload() throws ConfigException {
    Policies p;
    try {
      p = loadPolicies();
    } catch (ConfigException e) {
      metrics.reloadsFailed.increment();
      throw e;
    }
    policies = build(p, policies);
    metrics.reloadsOk.increment();
  }

  private void reloadIfChanged() {
    long s = stamp();
    if (s == configStamp) {
      return;
    }
    configStamp = s;
    try {
      reload();
      LOG.log(System.Logger.Level.INFO, "reloaded {0}: policies {1}", options.configFile,
          policies.keySet());
    } catch (ConfigException e) {
      LOG.log(System.Logger.Level.WARNING, "{0} not reloaded, the previous policies stay:\n{1}",
          options.configFile, e.getMessage());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "reload of " + options.configFile + " failed", e);
    }
  }

  // ---------------------------------------------------------------------------------------------

  private void serve(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    try {
      switch (path) {
        case "/v1/check" -> {
          if (!method.equals("POST")) {
            response.getHeaders().put(HttpHeader.ALLOW, "POST");
            throw new Refusal(405, "Method Not Allowed", "use POST for /v1/check");
          }
          authenticate(request);
          check(request, response, callback);
        }
        case "/healthz" -> text(response, callback, 200, "ok\n", "text/plain; charset=utf-8");
        case "/readyz" -> {
          String why = notReady();
          text(response, callback, why == null ? 200 : 503, why == null ? "ready\n" : why + "\n",
              "text/plain; charset=utf-8");
        }
        case "/metrics" -> text(response, callback, 200, metrics.render(storeCounters()),
            "text/plain; version=0.0.4; charset=utf-8");
        default -> throw new Refusal(404, "Not Found", "no such endpoint: " + path
            + " (POST /v1/check, GET /healthz, /readyz, /metrics)");
      }
    } catch (Refusal r) {
      if (r.status != 400) {
        // refused before the body was read (401, 404, 405, 413): the unread body makes the
        // connection unusable, so say so rather than let the client reuse it
        response.getHeaders().put(HttpHeader.CONNECTION, "close");
      }
      problem(response, callback, r.status, r.title, r.getMessage());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure on " + method + " " + path, e);
      problem(response, callback, 500, "Internal Server Error", "unexpected failure; see the server log");
    }
  }

  private void authenticate(Request request) throws Refusal {
    if (token == null) {
      return;
    }
    String given = request.getHeaders().get(HttpHeader.AUTHORIZATION);
    if (given == null || !MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
      throw new Refusal(401, "Unauthorized", "this service needs 'Authorization: Bearer <token>'");
    }
  }

  private String notReady() {
    if (!server.isStarted()) {
      return "starting";
    }
    if (store == null) {
      return null;
    }
    Policy any = policies.values().iterator().next();
    Decision d = any.limiter.check("__sluice_readyz__");
    return d.isDegraded() ? "the store does not answer" : null;
  }

  private Map<String, long[]> storeCounters() {
    Map<String, long[]> out = new LinkedHashMap<>();
    for (Policy p : policies.values()) {
      LimiterStats s = p.limiter.stats();
      out.put(p.name, new long[] {s.storeErrors(), s.degradedDecisions()});
    }
    return out;
  }

  private byte[] body(Request request) throws Refusal {
    long length = request.getLength();
    if (length > options.maxBodyBytes) {
      throw new Refusal(413, "Content Too Large", "the body is " + length + " bytes; at most "
          + options.maxBodyBytes + " are accepted");
    }
    try (InputStream in = Content.Source.asInputStream(request)) {
      byte[] b = in.readNBytes(options.maxBodyBytes + 1);
      if (b.length > options.maxBodyBytes) {
        throw new Refusal(413, "Content Too Large", "the body is more than " + options.maxBodyBytes
            + " bytes");
      }
      return b;
    } catch (IOException e) {
      throw new Refusal(400, "Bad Request", "the body could not be read: " + e.getMessage());
    }
  }

  private void check(Request request, Response response, Callback callback) throws Refusal {
    byte[] body = body(request);
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      throw new Refusal(400, "Malformed JSON", e.getOriginalMessage()
          + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      throw new Refusal(400, "Malformed JSON", e.getMessage());
    }
    if (root == null || root.isMissingNode()) {
      throw new Refusal(400, "Malformed JSON", "the body is empty; send {\"policy\": ..., \"key\": ...}"
          + " or {\"requests\": [...]}");
    }
    boolean batch = root.isArray() || (root.isObject() && root.has("requests"));
    if (!batch) {
      Check c = parse(root, "");
      Decision d = decide(c);
      int status = d.isAllowed() ? 200 : d.isDegraded() ? 503 : 429;
      for (Map.Entry<String, String> h : RateLimitHeaders.of(d, RateLimitHeaders.Mode.IETF).entrySet()) {
        response.getHeaders().put(h.getKey(), h.getValue());
      }
      json(response, callback, status, g -> result(g, c, d));
      return;
    }
    JsonNode list = root.isArray() ? root : root.get("requests");
    if (root.isObject() && root.size() != 1) {
      throw new Refusal(400, "Invalid check", "a batch is {\"requests\": [...]} with no other fields");
    }
    if (!list.isArray() || list.isEmpty()) {
      throw new Refusal(400, "Invalid check", "'requests' must be a non-empty array");
    }
    if (list.size() > options.maxBatch) {
      throw new Refusal(400, "Batch too large", "a batch holds at most " + options.maxBatch
          + " requests but this one has " + list.size());
    }
    List<Check> checks = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      checks.add(parse(list.get(i), "requests[" + i + "]."));
    }
    List<Decision> decisions = new ArrayList<>(checks.size());
    for (Check c : checks) {
      decisions.add(decide(c));
    }
    json(response, callback, 200, g -> {
      g.writeStartObject();
      g.writeArrayFieldStart("results");
      for (int i = 0; i < checks.size(); i++) {
        result(g, checks.get(i), decisions.get(i));
      }
      g.writeEndArray();
      g.writeEndObject();
    });
  }

  private Check parse(JsonNode n, String where) throws Refusal {
    if (!n.isObject()) {
      throw new Refusal(400, "Invalid check", where.isEmpty() ? "the body must be a JSON object"
          : where.substring(0, where.length() - 1) + " must be a JSON object");
    }
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!f.equals("policy") && !f.equals("key") && !f.equals("cost") && !f.equals("mode")) {
        throw new Refusal(400, "Invalid check", where + f + ": unknown field (expected policy, key,"
            + " cost, mode)");
      }
    }
    JsonNode p = n.get("policy");
    if (p == null || !p.isTextual()) {
      throw new Refusal(400, "Invalid check", where + "policy: required, a string (one of "
          + policies.keySet() + ")");
    }
    Policy policy = policies.get(p.asText());
    if (policy == null) {
      throw new Refusal(400, "Unknown policy", where + "policy: no policy named '" + p.asText()
          + "' (known: " + String.join(", ", policies.keySet()) + ")");
    }
    JsonNode k = n.get("key");
    if (k == null || !k.isTextual() || k.asText().isEmpty()) {
      throw new Refusal(400, "Invalid check", where + "key: required, a non-empty string");
    }
    if (k.asText().length() > options.maxKeyLength) {
      throw new Refusal(400, "Invalid check", where + "key: at most " + options.maxKeyLength
          + " characters but has " + k.asText().length());
    }
    // the shared stores' rule, whatever the store, so switching stores changes no answer
    String keyProblem = StoreKeys.problem(k.asText());
    if (keyProblem != null) {
      throw new Refusal(400, "Invalid check", where + "key: " + keyProblem);
    }
    double cost = 1;
    JsonNode c = n.get("cost");
    if (c != null) {
      if (!c.isNumber() || !Double.isFinite(c.asDouble()) || c.asDouble() <= 0) {
        throw new Refusal(400, "Invalid cost", where + "cost: must be a positive number but was " + c);
      }
      cost = c.asDouble();
    }
    String mode = "enforce";
    JsonNode m = n.get("mode");
    if (m != null) {
      mode = m.isTextual() ? m.asText() : String.valueOf(m);
      switch (mode) {
        case "enforce", "peek", "fill-up", "reserve" -> { }
        default -> throw new Refusal(400, "Invalid mode", where + "mode: must be enforce, peek,"
            + " fill-up or reserve but was " + m);
      }
      if (mode.equals("reserve")) {
        for (Limit l : policy.limits) {
          if (!l.algorithm().isBucket()) {
            throw new Refusal(400, "Invalid mode", where + "mode: reserve needs bucket limits but"
                + " policy '" + policy.name + "' has " + l.name());
          }
        }
      }
    }
    return new Check(policy, k.asText(), cost, mode);
  }

  private Decision decide(Check c) throws Refusal {
    long start = System.nanoTime();
    Decision d;
    try {
      d = switch (c.mode) {
        case "peek" -> c.policy.limiter.check(c.key, c.cost);
        case "fill-up" -> c.policy.limiter.fillUp(c.key, c.cost);
        case "reserve" -> c.policy.limiter.reserve(c.key, c.cost);
        default -> c.policy.limiter.tryAcquire(c.key, c.cost);
      };
    } catch (IllegalArgumentException e) {
      throw new Refusal(400, "Invalid check", e.getMessage());
    }
    String outcome = d.isAllowed() ? "allowed" : d.isDegraded() ? "unavailable" : "rejected";
    metrics.decision(c.policy.name, outcome, System.nanoTime() - start);
    return d;
  }

  private static void result(JsonGenerator g, Check c, Decision d) throws IOException {
    g.writeStartObject();
    g.writeStringField("policy", c.policy.name);
    g.writeStringField("key", c.key);
    g.writeStringField("mode", c.mode);
    g.writeBooleanField("allowed", d.isAllowed());
    if (c.mode.equals("fill-up")) {
      g.writeBooleanField("reachedCapacity", d.reachedCapacity());
    }
    g.writeNumberField("remaining", d.remaining());
    g.writeNumberField("retryAfterSeconds", d.retryAfterNanos() == Long.MAX_VALUE ? -1 : d.retryAfterNanos() / 1e9);
    g.writeNumberField("resetAfterSeconds", d.resetAfterNanos() / 1e9);
    g.writeNumberField("delaySeconds", d.delayNanos() / 1e9);
    g.writeStringField("limit", d.limit().name());
    if (d.isDegraded()) {
      g.writeBooleanField("degraded", true);
    }
    if (d.isNeverAdmissible()) {
      g.writeBooleanField("neverAdmissible", true);
    }
    g.writeObjectFieldStart("headers");
    for (Map.Entry<String, String> h : RateLimitHeaders.of(d, RateLimitHeaders.Mode.IETF).entrySet()) {
      g.writeStringField(h.getKey(), h.getValue());
    }
    g.writeEndObject();
    g.writeEndObject();
  }

  // ---------------------------------------------------------------------------------------------

  @FunctionalInterface
  private interface JsonWriter {
    void write(JsonGenerator g) throws IOException;
  }

  private void json(Response response, Callback callback, int status, JsonWriter w) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.getFactory().createGenerator(out)) {
      w.write(g);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    send(response, callback, status, "application/json", out.toByteArray());
  }

  private void text(Response response, Callback callback, int status, String body, String type) {
    send(response, callback, status, type, body.getBytes(StandardCharsets.UTF_8));
  }

  private void problem(Response response, Callback callback, int status, String title, String detail) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.getFactory().createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("type", "about:blank");
      g.writeStringField("title", title);
      g.writeNumberField("status", status);
      g.writeStringField("detail", detail);
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (status == 401) {
      response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer");
    }
    send(response, callback, status, PROBLEM, out.toByteArray());
  }

  private void send(Response response, Callback callback, int status, String type, byte[] body) {
    metrics.response(status);
    response.setStatus(status);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, type);
    response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
    response.write(true, ByteBuffer.wrap(body), callback);
  }

  /** Stops accepting, lets requests in flight finish (up to the shutdown grace), then releases the store. */
  @Override
  public void close() {
    if (reloader != null) {
      reloader.shutdownNow();
    }
    try {
      server.stop();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "stopping the HTTP server failed", e);
    }
    if (storeResources != null) {
      try {
        storeResources.close();
      } catch (Exception e) {
        LOG.log(System.Logger.Level.WARNING, "closing the store failed", e);
      }
    }
  }

  /** Requests being handled now (for tests of graceful shutdown). */
  long requestsInFlight() {
    return graceful.getCurrentRequestCount();
  }

  /** True once shutdown has begun: no new connections are accepted. */
  boolean isShuttingDown() {
    return graceful.isShutdown();
  }

  /** Blocks until the server stops. */
  public void join() throws InterruptedException {
    server.join();
  }

  /** The service's settings. */
  public static final class Options {
    String host = "127.0.0.1";
    int port = 8080;
    Path configFile;
    String redisUri;
    List<String> redisCluster;
    String postgresUrl;
    int postgresPoolSize = 16;
    String token;
    int maxBodyBytes = 64 * 1024;
    int maxBatch = 100;
    int maxKeyLength = 256;
    int maxThreads = 200;
    long maximumKeys = 1_000_000;
    Duration reloadEvery = Duration.ofSeconds(2);
    Duration shutdownGrace = Duration.ofSeconds(10);
    StoreFailure storeFailure = StoreFailure.FAIL_CLOSED;

    /** Address to bind (default 127.0.0.1: loopback only). */
    public Options host(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /** Port (default 8080; 0 picks a free one). */
    public Options port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be between 0 and 65535 but was " + port);
      }
      this.port = port;
      return this;
    }

    /** The policies file (default: the bundled sample, not reloaded). */
    public Options config(Path file) {
      this.configFile = file;
      return this;
    }

    /** Share limits through Redis at this URI (redis://, rediss://, redis-sentinel://). */
    public Options redis(String uri) {
      this.redisUri = uri;
      return this;
    }

    /** Share limits through a Redis Cluster reached through these seed URIs (redis://host:port). */
    public Options redisCluster(List<String> seeds) {
      if (seeds != null && seeds.isEmpty()) {
        throw new IllegalArgumentException("a Redis Cluster needs at least one seed URI");
      }
      this.redisCluster = seeds == null ? null : List.copyOf(seeds);
      return this;
    }

    /** Share limits through PostgreSQL at this JDBC URL (the table is created if missing). */
    public Options postgres(String jdbcUrl) {
      if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:postgresql:")) {
        throw new IllegalArgumentException("a PostgreSQL JDBC URL starts with jdbc:postgresql: but"
            + " was '" + jdbcUrl + "'");
      }
      this.postgresUrl = jdbcUrl;
      return this;
    }

    /** Require {@code Authorization: Bearer <token>} on /v1/ (default: no authentication). */
    public Options token(String token) {
      if (token != null && (token.isBlank() || token.length() < 16)) {
        throw new IllegalArgumentException("a bearer token must have at least 16 characters");
      }
      this.token = token;
      return this;
    }

    /** Largest accepted body (default 64 KiB); larger gets 413. */
    public Options maxBodyBytes(int bytes) {
      if (bytes < 64 || bytes > 16 * 1024 * 1024) {
        throw new IllegalArgumentException("maxBodyBytes must be between 64 and 16 MiB but was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /** Most requests in one batch (default 100). */
    public Options maxBatch(int n) {
      if (n < 1 || n > 10_000) {
        throw new IllegalArgumentException("maxBatch must be between 1 and 10000 but was " + n);
      }
      this.maxBatch = n;
      return this;
    }

    /** Longest key (default 256 characters). */
    public Options maxKeyLength(int n) {
      if (n < 1 || n > 65_536) {
        throw new IllegalArgumentException("maxKeyLength must be between 1 and 65536 but was " + n);
      }
      this.maxKeyLength = n;
      return this;
    }

    /** How often the policies file is checked for changes (default 2 s; zero: never). */
    public Options reloadEvery(Duration every) {
      this.reloadEvery = Objects.requireNonNull(every, "every");
      return this;
    }

    /** What decisions get while a shared store fails (default fail closed: 503). */
    public Options storeFailure(StoreFailure policy) {
      this.storeFailure = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** How long shutdown waits for requests in flight (default 10 s). */
    public Options shutdownGrace(Duration grace) {
      this.shutdownGrace = Objects.requireNonNull(grace, "grace");
      return this;
    }
  }
}

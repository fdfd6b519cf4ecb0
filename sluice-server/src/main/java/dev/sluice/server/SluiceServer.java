package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Decision;
import dev.sluice.LeaseStats;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.StoreFailure;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.StoreKeys;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
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
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * The standalone rate-limit service: {@code POST /v1/check} decides requests against named
 * policies from a YAML file; {@code /healthz}, {@code /readyz}, {@code /metrics}. Limits live in
 * memory, or in Redis or PostgreSQL to share them across instances. See {@code docs/server.md}.
 *
 * <p>Slow clients hold no thread: bodies are read asynchronously, a request must arrive whole
 * (head and body) within {@link Options#requestTimeout} or gets 408, a connection that trickles a
 * request's head for longer is closed, and connections are capped at
 * {@link Options#maxConnections}.
 */
public final class SluiceServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(SluiceServer.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private final Options options;
  private final Server server;
  private final ServerConnector connector;
  private final GracefulHandler graceful;
  private final Metrics metrics = new Metrics();
  private final Responses responses = new Responses(metrics, JSON);
  private final DecisionStore store;
  private final SharedStore shared;
  private final StoreFailure storeFailure;
  private final CircuitBreakerSettings breaker;
  private final PolicyRegistry registry;
  private final CheckCodec codec;
  private final ScheduledExecutorService reloader;
  /** Envoy's rate limit service on {@link Options#grpcPort}; null when off. */
  private final EnvoyService envoy;
  private io.grpc.Server grpc;
  private HealthStatusManager health;
  private volatile long envoyStamp;
  private final byte[] token;
  private final long requestTimeoutMillis;
  /** Requests whose body is still arriving, watched for their deadline. */
  private final Set<Exchange> waiting = ConcurrentHashMap.newKeySet();
  private static final long SWEEP_MILLIS = 50;
  private ScheduledExecutorService sweeper;

  private SluiceServer(Options options) throws ConfigException {
    this.options = options;
    this.token = options.token == null ? null : ("Bearer " + options.token).getBytes(StandardCharsets.UTF_8);
    this.requestTimeoutMillis = options.requestTimeout.toMillis();
    options.validate();
    Policies initial = PolicyRegistry.load(options);
    Policies.StoreSettings file = initial.store();
    this.storeFailure = PolicyRegistry.storeFailure(options, initial);
    this.breaker = options.circuitBreaker != null ? options.circuitBreaker
        : file.circuitBreaker() != null ? file.circuitBreaker() : CircuitBreakerSettings.defaults();
    Duration storeTimeout = options.storeTimeout != null ? options.storeTimeout
        : file.timeout() != null ? file.timeout() : Options.DEFAULT_STORE_TIMEOUT;
    PolicyRegistry.checkHeap(initial, options);
    this.shared = SharedStore.open(options, storeTimeout);
    this.store = shared == null ? null : shared.store();
    this.registry = new PolicyRegistry(options, store, storeFailure, breaker, metrics, initial);
    this.codec = new CheckCodec(options, registry, JSON);
    EnvoyConfig envoyConfig = null;
    if (options.grpcPort >= 0) {
      envoyConfig = EnvoyConfig.merge(options.envoyConfig == null ? null
          : EnvoyConfig.load(options.envoyConfig, envoySettings(options)),
          initial.envoy());
      if (envoyConfig == null) {
        throw new ConfigException(List.of("--grpc-port serves Envoy's rate limit service, which"
            + " needs descriptors: give --envoy-config, or an 'envoy' section in the policies"
            + " file"));
      }
    }
    this.envoy = envoyConfig == null ? null : new EnvoyService(envoyConfig,
        (name, limit) -> registry.limiter(name, List.of(limit), options.maximumKeys),
        metrics, SharedStore.ticksPerSecond(options), registry::get,
        new EnvoyService.Settings(options.envoyOverrides,
            EnvoyService.Headers.valueOf(options.envoyHeaders.toUpperCase(Locale.ROOT)),
            options.envoyShadowMode, options.envoyAlgorithm, options.wallMillis,
            options.envoyResponseMetadata, options.envoyQuotaMode));
    if (envoyConfig != null) {
      for (String w : envoyConfig.warnings()) {
        LOG.log(System.Logger.Level.WARNING, w);
      }
    }
    if (envoy != null) {
      registry.onReload(() -> {
        try {
          reloadEnvoy();
        } catch (ConfigException e) {
          LOG.log(System.Logger.Level.WARNING, "the Envoy configuration was not reloaded with the"
              + " policies, the previous one stays: {0}", String.join("; ", e.problems()));
        }
      });
    }
    this.envoyStamp = envoyStamp();

    QueuedThreadPool threads = new QueuedThreadPool(options.maxThreads, 8);
    threads.setName("sluice-http");
    this.server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    http.setIdleTimeout(options.idleTimeout.toMillis());
    this.connector = new ServerConnector(server, new HttpConnectionFactory(http));
    connector.setHost(options.host);
    connector.setPort(options.port);
    connector.setIdleTimeout(options.idleTimeout.toMillis());
    connector.addBean(new SlowHeads(options.requestTimeout.toMillis(), connector));
    server.addConnector(connector);
    server.addBean(new NetworkConnectionLimit(options.maxConnections, connector));
    server.setErrorHandler(responses.errorHandler());
    this.graceful = new GracefulHandler(new Handler.Abstract() {
      @Override
      public boolean handle(Request request, Response response, Callback callback) {
        serve(request, response, callback);
        return true;
      }
    });
    server.setHandler(graceful);
    server.setStopTimeout(options.shutdownGrace.toMillis());
    if ((options.configFile != null || envoy != null) && !options.reloadEvery.isZero()) {
      reloader = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-config-reload");
        t.setDaemon(true);
        return t;
      });
      long every = options.reloadEvery.toMillis();
      reloader.scheduleWithFixedDelay(() -> {
        if (options.configFile != null) {
          registry.reloadIfChanged();
        }
        if (envoy != null) {
          reloadEnvoyIfChanged();
        }
      }, every, every, TimeUnit.MILLISECONDS);
    } else {
      reloader = null;
    }
  }

  /**
   * Validates the configuration, connects the store and starts listening.
   *
   * @throws ConfigException if the policies file is invalid (every problem as file:line), or the
   *     heap is too small for the keys the policies may hold
   */
  public static SluiceServer start(Options options) throws Exception {
    SluiceServer s = new SluiceServer(options);
    try {
      s.server.start();
      if (s.envoy != null) {
        s.health = new HealthStatusManager();
        // "" and "ratelimit", as envoyproxy/ratelimit registers them: deployments probe either
        s.health.setStatus("ratelimit", HealthCheckResponse.ServingStatus.SERVING);
        s.grpc = NettyServerBuilder
            .forAddress(new InetSocketAddress(options.host, options.grpcPort))
            .directExecutor()
            .addService(s.envoy.definition()).addService(s.health.getHealthService())
            .build().start();
      }
      s.sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-request-deadlines");
        t.setDaemon(true);
        return t;
      });
      s.sweeper.scheduleWithFixedDelay(s::sweepSlowBodies, SWEEP_MILLIS, SWEEP_MILLIS,
          TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      s.close();
      throw new IOException("cannot listen on " + options.host + ":" + options.port + ": "
          + e.getMessage(), e);
    }
    return s;
  }

  private static EnvoyConfig.Settings envoySettings(Options options) {
    return new EnvoyConfig.Settings(SharedStore.ticksPerSecond(options), options.envoyAlgorithm,
        options.envoyMergeDomains);
  }

  /** Modification times and sizes of the Envoy configuration's files; -1 if unreadable. */
  private long envoyStamp() {
    if (options.envoyConfig == null) {
      return 0;
    }
    try (Stream<Path> files = Files.isDirectory(
        options.envoyConfig) ? Files.list(options.envoyConfig)
            : Stream.of(options.envoyConfig)) {
      long stamp = 17;
      for (Path f : (Iterable<Path>) files.sorted()::iterator) {
        stamp = stamp * 31 + f.getFileName().toString().hashCode();
        stamp = stamp * 31 + Files.getLastModifiedTime(f).toMillis();
        stamp = stamp * 31 + Files.size(f);
      }
      return stamp;
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * Reads the Envoy configuration again now: a valid one applies to the next request (limits
   * that did not change keep their state), an invalid one is counted and its problems thrown.
   */
  void reloadEnvoy() throws ConfigException {
    try {
      EnvoyConfig next = EnvoyConfig.merge(options.envoyConfig == null ? null
          : EnvoyConfig.load(options.envoyConfig, envoySettings(options)),
          registry.envoySection());
      envoy.reload(next == null ? EnvoyConfig.none() : next);
    } catch (ConfigException e) {
      metrics.reloadsFailed.increment();
      throw e;
    }
    metrics.reloadsOk.increment();
  }

  private void reloadEnvoyIfChanged() {
    long s = envoyStamp();
    if (s == envoyStamp) {
      return;
    }
    envoyStamp = s;
    try {
      reloadEnvoy();
      LOG.log(System.Logger.Level.INFO, "reloaded {0}", options.envoyConfig);
    } catch (ConfigException e) {
      LOG.log(System.Logger.Level.WARNING, "{0} not reloaded, the previous configuration stays: {1}",
          options.envoyConfig, String.join("; ", e.problems()));
    }
  }

  /** The port Envoy's rate limit service (gRPC) listens on; -1 when it is off. */
  public int grpcPort() {
    return grpc == null ? -1 : grpc.getPort();
  }

  /** The port it listens on (useful with port 0). */
  public int port() {
    return connector.getLocalPort();
  }

  /** The policy names now in force. */
  public List<String> policyNames() {
    return registry.names();
  }

  /** Where the policies come from: the file, or the bundled sample. */
  public String configSource() {
    return PolicyRegistry.source(options);
  }

  /**
   * The heap the service with these options needs for the keys its policies may hold; the
   * launcher sizes -Xmx with it ({@link PolicyRegistry#heapBytesNeeded(Policies, Options)}).
   *
   * @throws ConfigException if the policies file is invalid
   */
  public static long heapBytesNeeded(Options options) throws ConfigException {
    return PolicyRegistry.heapBytesNeeded(PolicyRegistry.load(options), options);
  }

  /**
   * Reads the policies file again now; on success the new policies apply to the next request, on
   * failure the old ones stay, the failure is counted and the problems are thrown.
   */
  public void reload() throws ConfigException {
    registry.reload();
  }

  // ------------------------------------------------------------------ requests

  private void serve(Request request, Response response, Callback callback) {
    Exchange x = new Exchange(request, response, callback, waiting);
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
          check(x);
        }
        case "/healthz" -> responses.text(x, 200, "ok\n", "text/plain; charset=utf-8");
        case "/readyz" -> {
          String why = notReady();
          responses.text(x, why == null ? 200 : 503, why == null ? "ready\n" : why + "\n",
              "text/plain; charset=utf-8");
        }
        case "/metrics" -> responses.text(x, 200, metrics.render(storeCounters(), options.leases != null),
            "text/plain; version=0.0.4; charset=utf-8");
        default -> throw new Refusal(404, Problem.HTTP, "no such endpoint: " + path
            + " (POST /v1/check, GET /healthz, /readyz, /metrics)");
      }
    } catch (Refusal r) {
      refuse(x, r, true);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure on " + method + " " + path, e);
      responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
    }
  }

  private void refuse(Exchange x, Refusal r, boolean bodyUnread) {
    if (bodyUnread && r.status != 400) {
      // refused before the body was read (401, 404, 405, 413): the unread body makes the
      // connection unusable, so say so rather than let the client reuse it
      x.response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
    responses.problem(x, r.status, r.problem, r.getMessage());
  }

  private void authenticate(Request request) throws Refusal {
    if (token == null) {
      return;
    }
    String given = request.getHeaders().get(HttpHeader.AUTHORIZATION);
    if (given == null || !MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
      throw new Refusal(401, Problem.HTTP, "this service needs 'Authorization: Bearer <token>'");
    }
  }

  /** Why the service is not ready, or null: asks the store directly, so it decides nothing. */
  private String notReady() {
    if (!server.isStarted()) {
      return "starting";
    }
    if (store == null) {
      return null;
    }
    try {
      store.ping();
      return null;
    } catch (RuntimeException e) {
      return "the store does not answer";
    }
  }

  private Map<String, long[]> storeCounters() {
    Map<String, long[]> out = new LinkedHashMap<>();
    for (PolicyRegistry.Policy p : registry.all()) {
      LimiterStats s = p.limiter().stats();
      LeaseStats l = s.leases();
      out.put(p.name(), new long[] {s.storeErrors(), s.degradedDecisions(), s.keysHeld(),
          p.maximumKeys(), p.leased() ? 1 : 0, l.leaseCalls(), l.unitsGranted(), l.unitsReturned(),
          l.unitsStranded(), l.unitsHeld(), (long) l.unitsSpent(), l.localRejections(),
          l.unitsReconciled()});
    }
    return out;
  }

  /**
   * Answers 408 to every request whose body is still on its way past its deadline; run by the
   * server's scheduler every {@value #SWEEP_MILLIS} ms. Requests whose body came with their head
   * are never in the set, so the common path schedules nothing per request.
   */
  private void sweepSlowBodies() {
    long now = System.nanoTime();
    for (Exchange x : waiting) {
      if (now - x.deadlineNanos >= 0 && x.claim()) {
        x.response.getHeaders().put(HttpHeader.CONNECTION, "close");
        responses.sendProblem(x, 408, Problem.HTTP, "the request did not arrive within "
            + requestTimeoutMillis + " ms");
      }
    }
  }

  /**
   * Reads the body without holding a thread, under the request's deadline (counted from its
   * first byte), then decides.
   */
  private void check(Exchange x) throws Refusal {
    long length = x.request.getLength();
    if (length > options.maxBodyBytes) {
      throw new Refusal(413, Problem.HTTP, "the body is " + length + " bytes; at most "
          + options.maxBodyBytes + " are accepted");
    }
    x.deadlineNanos = x.request.getBeginNanoTime() + TimeUnit.MILLISECONDS.toNanos(requestTimeoutMillis);
    // a body that came with the head costs nothing more; one still on its way is watched
    readBody(x.request, options.maxBodyBytes, () -> waiting.add(x), (body, failure) -> {
      if (x.answered.get()) {
        return;   // the deadline answered already
      }
      try {
        if (failure != null) {
          if (failure instanceof BodyTooLarge) {
            throw new Refusal(413, Problem.HTTP, "the body is more than " + options.maxBodyBytes + " bytes");
          }
          throw new Refusal(400, Problem.HTTP, "the body could not be read: " + failure.getMessage());
        }
        decide(x, body);
      } catch (Refusal r) {
        refuse(x, r, failure != null);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "unexpected failure on POST /v1/check", e);
        responses.problem(x, 500, Problem.HTTP, "unexpected failure; see the server log");
      }
    });
  }

  /** The body grew past the limit while it was read. */
  private static final class BodyTooLarge extends Exception {
    private static final long serialVersionUID = 1L;

    BodyTooLarge() {
      super(null, null, false, false);
    }
  }

  /**
   * Reads a body of at most {@code max} bytes as its chunks arrive, holding no thread while it
   * waits for them (Jetty calls back on demand), then hands it, or the failure, to {@code done}.
   */
  private static void readBody(Request request, int max, Runnable firstWait,
      BiConsumer<byte[], Throwable> done) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.min(max, 1024));
    new Runnable() {
      private boolean waited;

      @Override
      public void run() {
        while (true) {
          Content.Chunk chunk = request.read();
          if (chunk == null) {
            if (!waited) {
              waited = true;
              firstWait.run();
            }
            request.demand(this);
            return;
          }
          if (Content.Chunk.isFailure(chunk)) {
            done.accept(null, chunk.getFailure());
            return;
          }
          ByteBuffer b = chunk.getByteBuffer();
          if (out.size() + b.remaining() > max) {
            chunk.release();
            done.accept(null, new BodyTooLarge());
            return;
          }
          byte[] bytes = new byte[b.remaining()];
          b.get(bytes);
          out.write(bytes, 0, bytes.length);
          chunk.release();
          if (chunk.isLast()) {
            done.accept(out.toByteArray(), null);
            return;
          }
        }
      }
    }.run();
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
    return d;
  }

  // ------------------------------------------------------------------ lifecycle

  /** Stops accepting, lets requests in flight finish (up to the shutdown grace), then releases the store. */
  @Override
  public void close() {
    if (reloader != null) {
      reloader.shutdownNow();
    }
    if (grpc != null) {
      health.enterTerminalState();
      grpc.shutdown();
      try {
        if (!grpc.awaitTermination(options.shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
          grpc.shutdownNow();
        }
      } catch (InterruptedException e) {
        grpc.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
    try {
      server.stop();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "stopping the HTTP server failed", e);
    }
    registry.closeAll();
    if (envoy != null) {
      envoy.close();
    }
    if (shared != null) {
      try {
        shared.close();
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
}

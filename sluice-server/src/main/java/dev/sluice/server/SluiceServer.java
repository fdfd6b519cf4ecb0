package dev.sluice.server;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.quota.InMemoryQuotaStore;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import java.util.Map;
import java.util.Set;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.CircuitBreakerSettings;
import dev.sluice.StoreFailure;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.Signals;
import dev.sluice.spi.DecisionStore;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The standalone rate-limit service: {@code POST /v1/check} decides requests against named
 * policies from a YAML file; {@code /healthz}, {@code /readyz}, {@code /metrics}. Limits live in
 * memory, or in Redis or PostgreSQL to share them across instances. See {@code docs/server.md}.
 *
 * <p>This class wires the parts together and runs their lifecycle: the policies
 * ({@link PolicyRegistry}), the shared store ({@link SharedStore}), the HTTP side (Jetty in
 * {@link HttpEndpoint}, routing in {@link Router}, {@code /v1/check} in {@link CheckEndpoint},
 * bodies under their deadline in {@link BodyReader}), Envoy's API ({@link EnvoyService} on
 * {@link GrpcEndpoint}, reloaded by {@link EnvoyReloader}) and the counters ({@link Metrics}).
 *
 * <p>Slow clients hold no thread: bodies are read asynchronously, a request must arrive whole
 * (head and body) within {@link Options#requestTimeout} or gets 408, a connection that trickles a
 * request's head for longer is closed, and connections are capped at
 * {@link Options#maxConnections}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-service">docs/server.md, "The service"</a>.
 */
public final class SluiceServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(SluiceServer.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private final Options options;
  private final Metrics metrics = new Metrics();
  private final SharedStore shared;
  private final PolicyRegistry registry;
  private final BodyReader bodies;
  /** {@code /v1/permits}: the file's concurrency limits. */
  private final PermitEndpoint permits;
  private final HttpEndpoint http;
  /** Envoy's rate limit service on {@link Options#grpcPort}; null when off. */
  private final EnvoyService envoy;
  private final EnvoyReloader envoyReloader;
  private GrpcEndpoint grpc;
  /** The service's own health shedder ({@code --shed-cpu}), or null: every endpoint asks it. */
  private final HealthShedder health;
  private final ScheduledExecutorService reloader;
  /** The meters pushed over OTLP; null without --otlp-endpoint. */
  private final OtlpExport otlp;
  /** Samples the console's history once a second; null without an admin token. */
  private final ScheduledExecutorService sampler;
  /** This instance's reading of the quotas' store (the shared store's, or memory). */
  private final Quotas quotas;
  /** How often the quotas are read again when they changed. */
  static final Duration QUOTA_REFRESH = Duration.ofMillis(500);

  private SluiceServer(Options options) throws ConfigException {
    this.options = options;
    options.validate();
    Policies initial = PolicyRegistry.load(options);
    Policies.StoreSettings file = initial.store();
    StoreFailure storeFailure = PolicyRegistry.storeFailure(options, initial);
    CircuitBreakerSettings breaker = options.circuitBreaker != null ? options.circuitBreaker
        : file.circuitBreaker() != null ? file.circuitBreaker() : CircuitBreakerSettings.defaults();
    Duration storeTimeout = options.storeTimeout != null ? options.storeTimeout
        : file.timeout() != null ? file.timeout() : Options.DEFAULT_STORE_TIMEOUT;
    PolicyRegistry.checkHeap(initial, options);
    this.shared = SharedStore.open(options, storeTimeout);
    DecisionStore store = shared == null ? null : shared.store();
    QuotaStore quotaStore = shared != null && shared.quotas() != null ? shared.quotas()
        : InMemoryQuotaStore.create();
    if (shared != null && shared.quotas() == null) {
      LOG.log(System.Logger.Level.WARNING, "quotas are kept in this instance's memory: a Redis"
          + " Cluster does not share them yet");
    }
    this.quotas = Quotas.of(quotaStore).refreshEvery(QUOTA_REFRESH);
    this.registry = new PolicyRegistry(options, store, storeFailure, breaker, metrics, initial,
        quotas);

    if (options.grpcPort >= 0) {
      this.envoyReloader = new EnvoyReloader(options, registry::envoySection, metrics);
      this.envoy = new EnvoyService(envoyReloader.load(),
          (name, limit) -> registry.limiter(name, List.of(limit), options.maximumKeys),
          metrics, SharedStore.ticksPerSecond(options), registry::get,
          new EnvoyService.Settings(options.envoyOverrides,
              EnvoyService.Headers.valueOf(options.envoyHeaders.toUpperCase(Locale.ROOT)),
              options.envoyShadowMode, options.envoyAlgorithm, options.wallMillis,
              options.envoyResponseMetadata, options.envoyQuotaMode));
      envoyReloader.serve(envoy);
      registry.onReload(envoyReloader::reloadLogged);
    } else {
      this.envoyReloader = null;
      this.envoy = null;
    }

    Responses responses = new Responses(metrics, JSON);
    this.bodies = new BodyReader(responses, options.requestTimeout.toMillis());
    HealthShedder health = options.health != null ? options.health
        : options.shedCpu == null ? null : HealthShedder.builder()
            .signal(Signals.processCpu(), options.shedCpu[0], options.shedCpu[1]).build();
    CheckEndpoint check = new CheckEndpoint(new CheckCodec(options, registry, JSON), bodies,
        responses, metrics, options.maxBodyBytes, health);
    Map<String, ConcurrencyLimiter> concurrency = PermitEndpoint.limiters(initial, store,
        storeFailure, breaker, quotas);
    this.permits = new PermitEndpoint(concurrency, bodies, responses, JSON, options.maxBodyBytes,
        options.maximumKeys, options.maxKeyLength, health, metrics);
    QuotaEndpoint quotaEndpoint = new QuotaEndpoint(quotaStore, quotas, bodies, responses, JSON,
        options.maxBodyBytes, SharedStore.ticksPerSecond(options),
        () -> Set.copyOf(registry.names()), Set.copyOf(concurrency.keySet()));
    this.health = health;
    this.otlp = options.otlpEndpoint == null ? null : new OtlpExport(options.otlpEndpoint,
        options.otlpStep, metrics, registry, concurrency);
    Console console = new Console(metrics, registry, concurrency, permits, quotaStore, responses,
        () -> options.host + ":" + port(), System::currentTimeMillis);
    this.http = new HttpEndpoint(options, new Router(bodies, check, permits, responses,
        options.token, options.adminToken, metrics, quotaEndpoint, console, () -> notReady(store),
        () -> metrics.render(registry.counters(), options.leases != null) + permits.render()),
        responses.errorHandler());

    if (options.adminToken != null) {
      sampler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-console-sample");
        t.setDaemon(true);
        return t;
      });
      // a sample that throws would end the schedule: a failed one is skipped
      var unused = sampler.scheduleAtFixedRate(() -> {
        try {
          console.sample();
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.DEBUG, "a console sample failed", e);
        }
      }, 0, 1, TimeUnit.SECONDS);
    } else {
      sampler = null;
    }
    if ((options.configFile != null || envoy != null) && !options.reloadEvery.isZero()) {
      reloader = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-config-reload");
        t.setDaemon(true);
        return t;
      });
      long every = options.reloadEvery.toMillis();
      // a task that throws would end the schedule: each failure is logged, the next run retries
      var unused = reloader.scheduleWithFixedDelay(() -> {
        try {
          if (options.configFile != null) {
            registry.reloadIfChanged();
          }
          if (envoyReloader != null) {
            envoyReloader.reloadIfChanged();
          }
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "reloading the configuration failed", e);
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
      s.http.start();
      if (s.envoy != null) {
        s.grpc = GrpcEndpoint.start(options.host, options.grpcPort, s.envoy,
            options.shutdownGrace, s.health);
      }
      s.bodies.start();
    } catch (Exception e) {
      s.close();
      throw new IOException("cannot listen on " + options.host + ":" + options.port + ": "
          + e.getMessage(), e);
    }
    return s;
  }

  /**
   * Reads the Envoy configuration again now: a valid one applies to the next request (limits
   * that did not change keep their state), an invalid one is counted and its problems thrown.
   */
  void reloadEnvoy() throws ConfigException {
    envoyReloader.reload();
  }

  /** The port Envoy's rate limit service (gRPC) listens on; -1 when it is off. */
  public int grpcPort() {
    return grpc == null ? -1 : grpc.port();
  }

  /** The port it listens on (useful with port 0). */
  public int port() {
    return http.port();
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

  /** Why the service is not ready, or null: asks the store directly, so it decides nothing. */
  private String notReady(DecisionStore store) {
    if (!http.isStarted()) {
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

  /** Stops accepting, lets requests in flight finish (up to the shutdown grace), then releases the store. */
  @Override
  public void close() {
    if (reloader != null) {
      reloader.shutdownNow();
    }
    if (sampler != null) {
      sampler.shutdownNow();
    }
    if (grpc != null) {
      grpc.close();
    }
    bodies.close();
    try {
      http.stop();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "stopping the HTTP server failed", e);
    }
    if (otlp != null) {
      otlp.close();   // a last push, before the limiters go
    }
    quotas.close();
    registry.closeAll();
    permits.close();
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
    return http.requestsInFlight();
  }

  /** True once shutdown has begun: no new connections are accepted. */
  boolean isShuttingDown() {
    return http.isShuttingDown();
  }

  /** Blocks until the server stops. */
  public void join() throws InterruptedException {
    http.join();
  }
}

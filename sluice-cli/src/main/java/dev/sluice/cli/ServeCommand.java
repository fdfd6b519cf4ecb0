package dev.sluice.cli;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.LeaseSettings;
import dev.sluice.StoreFailure;
import dev.sluice.server.ConfigException;
import dev.sluice.server.Options;
import dev.sluice.server.Policies;
import dev.sluice.server.SluiceServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;

/**
 * {@code sluice serve}: the standalone rate-limit service. Its defaults are {@link Options}'
 * ({@link Defaults}); a store, breaker or lease setting reaches Options only when given, so that
 * the policies file's {@code store:} section fills the rest.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, defaultValueProvider = ServeCommand.Defaults.class,
    description = {"Runs the rate-limit service: POST /v1/check (rate limits), /v1/permits"
        + " (concurrency limits), GET /healthz, /readyz, /metrics; with --grpc-port, Envoy's rate"
        + " limit service; with an admin token, quotas (/v1/quotas), the keys refused most and the"
        + " console (/console/).",
        "Without --config it serves the bundled sample policies (demo, api, jobs)."})
final class ServeCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = "--config", paramLabel = "FILE", description = "policies (YAML); reloaded when it changes")
  Path config;

  @Option(names = "--host", description = "address to bind (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--port", description = "port (default: ${DEFAULT-VALUE}; 0: any free)")
  int port;

  @Option(names = "--grpc-port", paramLabel = "PORT", description = "also serve Envoy's rate limit"
      + " service (gRPC ShouldRateLimit) on this port (0: any free); needs --envoy-config")
  Integer grpcPort;

  @Option(names = "--envoy-config", paramLabel = "PATH", description = "Envoy rate limit"
      + " configuration in envoyproxy/ratelimit's format: a file, or a directory of them")
  Path envoyConfig;

  @Option(names = "--envoy-algorithm", paramLabel = "ALGORITHM", description = "algorithm of Envoy descriptors that name none: leaky-bucket,"
      + " token-bucket, gcra, sliding-window, or fixed-window (envoyproxy/ratelimit's own"
      + " counter: calendar windows, refused hits counted) (default: ${DEFAULT-VALUE})")
  String envoyAlgorithm;

  @Option(names = "--envoy-overrides", paramLabel = "true|false", arity = "1", description = "apply requests' per-descriptor limit overrides, as"
      + " envoyproxy/ratelimit does (default: ${DEFAULT-VALUE})")
  boolean envoyOverrides;

  @Option(names = "--envoy-headers", paramLabel = "MODE", description = "headers Envoy's answers carry: none (as envoyproxy/ratelimit),"
      + " ratelimit (its RateLimit-Limit/-Remaining/-Reset), ietf (RateLimit-Policy, RateLimit,"
      + " Retry-After) (default: ${DEFAULT-VALUE})")
  String envoyHeaders;

  @Option(names = "--envoy-shadow-mode", description = "answer every Envoy request OK, still"
      + " deciding and charging (envoyproxy/ratelimit's SHADOW_MODE)")
  boolean envoyShadowMode;

  @Option(names = "--envoy-response-metadata", description = "Envoy answers carry dynamic"
      + " metadata: the domain, the descriptors, the configured metadata of those that passed"
      + " (envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA)")
  boolean envoyResponseMetadata;

  @Option(names = "--envoy-quota-mode", description = "every Envoy descriptor in quota mode: an"
      + " answer is over the limit only when all its descriptors are (envoyproxy/ratelimit's"
      + " QUOTA_MODE)")
  boolean envoyQuotaMode;

  @Option(names = "--envoy-merge-domains", description = "merge Envoy configuration files that"
      + " name the same domain (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG)")
  boolean envoyMergeDomains;

  @Option(names = "--redis", paramLabel = "URI", description = "share limits through Redis (redis://host:6379)")
  String redis;

  @Option(names = "--redis-cluster", paramLabel = "URI", split = ",",
      description = "share limits through a Redis Cluster (seed URIs, comma-separated)")
  List<String> redisCluster;

  @Option(names = "--postgres", paramLabel = "JDBC-URL",
      description = "share limits through PostgreSQL (jdbc:postgresql://host/db?user=...&password=...)")
  String postgres;

  @Option(names = "--mysql", paramLabel = "JDBC-URL",
      description = "share limits through MySQL or MariaDB (jdbc:mariadb://host/db?user=...&password=... or jdbc:mysql://...)")
  String mysql;

  @Option(names = "--leases",
      description = "fleet mode: answer hot keys from leases of the shared bucket, without a store call per decision (docs/fleet.md)")
  boolean leases;

  @Option(names = "--lease-lifetime", paramLabel = "DURATION",
      description = "with --leases: what is held this long after the last grant is given back (default: ${DEFAULT-VALUE})")
  String leaseLifetime;

  @Option(names = "--lease-share", paramLabel = "SHARE",
      description = "with --leases: the most the fleet admits beyond a limit, as a share of a second of its rate (default: ${DEFAULT-VALUE})")
  Double leaseShare;

  @Option(names = "--lease-instances", paramLabel = "N",
      description = "with --leases: instances of the service sharing the store (default: ${DEFAULT-VALUE})")
  Integer leaseInstances;

  @Option(names = "--store-failure", paramLabel = "closed|open|fallback|local-share",
      description = "what requests get while a shared store fails (default: the file's store.failure, else ${DEFAULT-VALUE})")
  String storeFailure;

  @Option(names = "--store-timeout", paramLabel = "DURATION",
      description = "the longest one decision may take in the shared store (default: the file's store.timeout, else ${DEFAULT-VALUE})")
  String storeTimeout;

  @Option(names = "--breaker-failure-rate", paramLabel = "RATE",
      description = "share of failed store calls in the window that opens the circuit breaker (default: ${DEFAULT-VALUE})")
  Double breakerFailureRate;

  @Option(names = "--breaker-minimum-calls", paramLabel = "N",
      description = "fewest calls in the window for the failure rate to count (default: ${DEFAULT-VALUE})")
  Integer breakerMinimumCalls;

  @Option(names = "--breaker-window", paramLabel = "DURATION",
      description = "how far back the failure rate looks (default: ${DEFAULT-VALUE})")
  String breakerWindow;

  @Option(names = "--breaker-unreachable", paramLabel = "N",
      description = "calls in a row that cannot reach the store before the breaker opens (default: ${DEFAULT-VALUE})")
  Integer breakerUnreachable;

  @Option(names = "--breaker-open", paramLabel = "DURATION",
      description = "how long the breaker stays open before a trial call (default: ${DEFAULT-VALUE})")
  String breakerOpen;

  @Option(names = "--maximum-keys", paramLabel = "N",
      description = "keys each policy holds in memory (default: ${DEFAULT-VALUE}; a policy's maximumKeys wins); sizes the heap")
  long maximumKeys;

  @Option(names = "--request-timeout", paramLabel = "DURATION",
      description = "the most time a request may take to arrive, head and body (default: ${DEFAULT-VALUE}); then 408")
  String requestTimeout;

  @Option(names = "--idle-timeout", paramLabel = "DURATION",
      description = "how long an idle connection stays open (default: ${DEFAULT-VALUE})")
  String idleTimeout;

  @Option(names = "--max-connections", paramLabel = "N",
      description = "most connections open at once (default: ${DEFAULT-VALUE})")
  int maxConnections;

  @Option(names = "--reload-every", paramLabel = "DURATION",
      description = "how often the policies file is checked for changes; 0s: never"
          + " (default: ${DEFAULT-VALUE})")
  String reloadEvery;

  @Option(names = "--shutdown-grace", paramLabel = "DURATION",
      description = "how long SIGTERM waits for requests in flight (default: ${DEFAULT-VALUE})")
  String shutdownGrace;

  @Option(names = "--max-threads", paramLabel = "N",
      description = "threads serving requests (default: ${DEFAULT-VALUE})")
  int maxThreads;

  @Option(names = "--postgres-pool-size", paramLabel = "N",
      description = "connections in the PostgreSQL pool (default: ${DEFAULT-VALUE})")
  int postgresPoolSize;

  @Option(names = "--mysql-pool-size", paramLabel = "N",
      description = "connections in the MySQL pool (default: ${DEFAULT-VALUE})")
  int mysqlPoolSize;

  @Option(names = "--print-heap", hidden = true,
      description = "print the -Xmx the policies need and exit (used by ./sluice)")
  boolean printHeap;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "require 'Authorization: Bearer <token>' on /v1/ (token read from FILE; or set SLUICE_TOKEN)")
  Path tokenFile;

  @Option(names = "--admin-token-file", paramLabel = "FILE",
      description = "turn on the admin API (quotas, the keys refused most) and the console"
          + " (/console) behind 'Authorization: Bearer <admin token>', read from FILE (or set"
          + " SLUICE_ADMIN_TOKEN); it must differ from the decision token")
  Path adminTokenFile;

  @Option(names = "--otlp-endpoint", paramLabel = "URL", description = "also push the meters"
      + " over OTLP (http/protobuf) to URL, e.g. http://collector:4318/v1/metrics")
  String otlpEndpoint;

  @Option(names = "--otlp-step", paramLabel = "DURATION",
      description = "how often the meters are pushed over OTLP (default: ${DEFAULT-VALUE})")
  String otlpStep;

  @Option(names = "--max-body", description = "largest body in bytes (default: ${DEFAULT-VALUE})")
  int maxBody;

  @Option(names = "--shed-cpu", paramLabel = "START,FULL",
      description = "shed checks by this process's CPU (a share of what it may use): sheddable"
          + " ones (X-Priority: sheddable) from START, normal ones from halfway, all but critical"
          + " at FULL, as a fast 503 (e.g. 0.9,0.98; default: off)")
  String shedCpu;

  @Option(names = "--max-batch", description = "most requests per batch (default: ${DEFAULT-VALUE})")
  int maxBatch;

  @Option(names = "--max-key-length", description = "longest key (default: ${DEFAULT-VALUE})")
  int maxKeyLength;

  private static Duration duration(String option, String text) {
    Duration d = Policies.parseDuration(text.trim());
    if (d == null) {
      throw new IllegalArgumentException(option + " must be a duration such as 250ms, 5s or 1m but was '"
          + text + "'");
    }
    return d;
  }

  /** The service's defaults, from {@link Options#defaults()}: the only place they are written. */
  static final class Defaults implements IDefaultValueProvider {
    private static final Map<String, String> DEFAULTS = Options.defaults();

    @Override
    public String defaultValue(ArgSpec arg) {
      return arg instanceof OptionSpec o ? DEFAULTS.get(o.longestName().substring(2)) : null;
    }
  }

  /** Whether the option was on the command line (a default is not). */
  private boolean given(String option) {
    return spec.commandLine().getParseResult().hasMatchedOption(option);
  }

  private CircuitBreakerSettings breaker() {
    if (!given("--breaker-failure-rate") && !given("--breaker-minimum-calls")
        && !given("--breaker-window") && !given("--breaker-unreachable")
        && !given("--breaker-open")) {
      return null;   // the file's, else the defaults
    }
    return CircuitBreakerSettings.defaults()
        .withFailureRate(breakerFailureRate)
        .withMinimumCalls(breakerMinimumCalls)
        .withWindow(duration("--breaker-window", breakerWindow))
        .withConsecutiveUnavailable(breakerUnreachable)
        .withOpenFor(duration("--breaker-open", breakerOpen));
  }

  private LeaseSettings leaseSettings() {
    return LeaseSettings.defaults()
        .withLifetime(duration("--lease-lifetime", leaseLifetime))
        .withExcessShare(leaseShare)
        .withInstances(leaseInstances);
  }

  @Override
  public Integer call() throws Exception {
    try {
      return serve();
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice serve: " + e.getMessage());
      return 2;
    } catch (IOException | IllegalStateException e) {
      spec.commandLine().getErr().println("sluice serve: " + e.getMessage());
      return 1;
    }
  }

  private int serve() throws Exception {
    if ((redis != null ? 1 : 0) + (redisCluster != null ? 1 : 0) + (postgres != null ? 1 : 0)
        + (mysql != null ? 1 : 0) > 1) {
      throw new InputException("choose one of --redis, --redis-cluster, --postgres and --mysql");
    }
    StoreFailure failure = !given("--store-failure") ? null : switch (storeFailure) {
      case "closed" -> StoreFailure.FAIL_CLOSED;
      case "open" -> StoreFailure.FAIL_OPEN;
      case "fallback" -> StoreFailure.FALLBACK_IN_MEMORY;
      case "local-share" -> StoreFailure.LOCAL_SHARE;
      default -> throw new InputException("--store-failure must be closed, open, fallback or"
          + " local-share but was '" + storeFailure + "'");
    };
    if (!leases && (given("--lease-lifetime") || given("--lease-share")
        || given("--lease-instances"))) {
      throw new InputException("--lease-lifetime, --lease-share and --lease-instances need --leases");
    }
    String token = System.getenv("SLUICE_TOKEN");
    if (tokenFile != null) {
      token = Files.readString(tokenFile).trim();
    }
    String adminToken = System.getenv("SLUICE_ADMIN_TOKEN");
    if (adminTokenFile != null) {
      adminToken = Files.readString(adminTokenFile).trim();
    }
    boolean adminOn = adminToken != null && !adminToken.isEmpty();
    Options o;
    try {
      o = new Options().host(host).port(port).config(config).redis(redis)
          .redisCluster(redisCluster).postgres(postgres).mysql(mysql).storeFailure(failure)
          .token(token == null || token.isEmpty() ? null : token)
          .adminToken(adminToken == null || adminToken.isEmpty() ? null : adminToken)
          .maxBodyBytes(maxBody).maxBatch(maxBatch).maxKeyLength(maxKeyLength)
          .storeTimeout(given("--store-timeout") ? duration("--store-timeout", storeTimeout) : null)
          .circuitBreaker(breaker())
          .maximumKeys(maximumKeys)
          .requestTimeout(duration("--request-timeout", requestTimeout))
          .idleTimeout(duration("--idle-timeout", idleTimeout))
          .maxConnections(maxConnections).maxThreads(maxThreads).postgresPoolSize(postgresPoolSize)
          .mysqlPoolSize(mysqlPoolSize)
          .reloadEvery(duration("--reload-every", reloadEvery))
          .shutdownGrace(duration("--shutdown-grace", shutdownGrace))
          .otlpEndpoint(otlpEndpoint).otlpStep(duration("--otlp-step", otlpStep))
          .leases(leases ? leaseSettings() : null);
      if (grpcPort != null) {
        o.grpcPort(grpcPort);
      }
      if (envoyConfig != null) {
        o.envoyConfig(envoyConfig);
      }
      if (shedCpu != null) {
        String[] band = shedCpu.split(",", -1);
        if (band.length != 2) {
          throw new IllegalArgumentException("--shed-cpu must be START,FULL (e.g. 0.9,0.98) but"
              + " was '" + shedCpu + "'");
        }
        try {
          o.shedCpu(Double.parseDouble(band[0].trim()), Double.parseDouble(band[1].trim()));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("--shed-cpu must be two numbers, START,FULL (e.g."
              + " 0.9,0.98) but was '" + shedCpu + "'", e);
        }
      }
      o.envoyAlgorithm(envoyAlgorithm).envoyOverrides(envoyOverrides).envoyHeaders(envoyHeaders)
          .envoyShadowMode(envoyShadowMode).envoyMergeDomains(envoyMergeDomains)
          .envoyResponseMetadata(envoyResponseMetadata).envoyQuotaMode(envoyQuotaMode);
      o.validate();
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    if (printHeap) {
      // for ./sluice: the heap the policies need, as a JVM option; nothing when they are invalid
      try {
        long mib = (SluiceServer.heapBytesNeeded(o) + (1 << 20) - 1) >> 20;
        spec.commandLine().getOut().println("-Xmx" + mib + "m");
      } catch (ConfigException e) {
        // the real start reports the problems
      }
      return 0;
    }
    SluiceServer server;
    try {
      server = SluiceServer.start(o);
    } catch (ConfigException e) {
      throw new InputException("the configuration is not valid:\n" + e.getMessage());
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // SIGTERM or Ctrl-C: finish what is in flight, release the store, and exit 0 as the docs
      // promise (the JVM's own status after a signal would be 128 + the signal's number)
      int status = 0;
      try {
        server.close();
      } catch (Throwable t) {
        System.err.println("sluice serve: shutdown failed: " + t);
        status = 1;
      }
      System.err.flush();
      Runtime.getRuntime().halt(status);
    }, "sluice-shutdown"));
    String store = redis != null ? "Redis" : redisCluster != null ? "Redis Cluster"
        : postgres != null ? "PostgreSQL" : "memory";
    spec.commandLine().getErr().printf("sluice: listening on http://%s:%d (store: %s, policies: %s from %s)%n",
        host.contains(":") ? "[" + host + "]" : host, server.port(), store,
        String.join(", ", server.policyNames()), server.configSource());
    if (server.grpcPort() >= 0) {
      spec.commandLine().getErr().printf("sluice: Envoy's rate limit service (gRPC) on %s:%d%n",
          host.contains(":") ? "[" + host + "]" : host, server.grpcPort());
    }
    if (adminOn) {
      spec.commandLine().getErr().printf("sluice: console on http://%s:%d/console (admin token)%n",
          host.contains(":") ? "[" + host + "]" : host, server.port());
    }
    spec.commandLine().getErr().printf("try:   curl -i -X POST http://%s:%d/v1/check -d '{\"policy\":\"%s\",\"key\":\"alice\"}'%n",
        host.contains(":") ? "[" + host + "]" : host, server.port(), server.policyNames().get(0));
    spec.commandLine().getErr().flush();
    server.join();
    return 0;
  }
}

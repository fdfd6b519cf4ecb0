package dev.sluice.server;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.LeaseSettings;
import dev.sluice.StoreFailure;
import java.nio.file.Path;
import dev.sluice.health.HealthShedder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The service's settings, each with its default; every setter refuses a value out of range with
 * a sentence naming it. The command line ({@code sluice serve --help}) sets the same fields; a
 * policies file's {@code store:} section fills the store settings the command line leaves unset.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-service">docs/server.md, "The service"</a>.
 */
public final class Options {
  /** Keys each policy holds in memory unless it says otherwise. */
  public static final long DEFAULT_MAXIMUM_KEYS = 100_000;
  /** The longest one decision may take in a shared store, unless the file or a flag says. */
  public static final Duration DEFAULT_STORE_TIMEOUT = Duration.ofMillis(250);

  String host = "127.0.0.1";
  int port = 8080;
  Path configFile;
  String redisUri;
  List<String> redisCluster;
  String postgresUrl;
  int postgresPoolSize = 16;
  String mysqlUrl;
  int mysqlPoolSize = 16;
  String token;
  String adminToken;
  /** Where the meters are pushed over OTLP (http/protobuf); null: not pushed. */
  String otlpEndpoint;
  Duration otlpStep = Duration.ofSeconds(60);
  int maxBodyBytes = 64 * 1024;
  int maxBatch = 100;
  int maxKeyLength = 256;
  int maxThreads = 200;
  long maximumKeys = DEFAULT_MAXIMUM_KEYS;
  Duration reloadEvery = Duration.ofSeconds(2);
  Duration shutdownGrace = Duration.ofSeconds(10);
  StoreFailure storeFailure;
  Duration storeTimeout;
  CircuitBreakerSettings circuitBreaker;
  LeaseSettings leases;
  Duration requestTimeout = Duration.ofSeconds(5);
  Duration idleTimeout = Duration.ofSeconds(30);
  /**
   * Once shutdown begins, a connection that sends nothing for this long is closed, a request
   * under way on it or not (Jetty's rule, so that idle keep-alive connections do not hold the
   * stop for the whole grace). Not a command-line option; tests lengthen it to hold a stalled
   * request in flight.
   */
  Duration shutdownIdleTimeout = Duration.ofSeconds(1);
  int maxConnections = 10_000;
  /** Where shedding by the service's own CPU starts and is full; null: off. */
  double[] shedCpu;
  /** A shedder of the test's own (its signals), in place of the CPU's. */
  HealthShedder health;

  /**
   * The default of every setting, written as the command line takes it ({@code 8080},
   * {@code 5s}, {@code leaky-bucket}), by the name of its {@code sluice serve} option without
   * the dashes ({@code port}, {@code request-timeout}). This is the one place the service's
   * defaults are written: the command line takes its defaults and its help text from here, the
   * store settings' from {@link CircuitBreakerSettings#defaults()} and
   * {@link LeaseSettings#defaults()}.
   */
  public static Map<String, String> defaults() {
    Options d = new Options();
    CircuitBreakerSettings breaker = CircuitBreakerSettings.defaults();
    LeaseSettings lease = LeaseSettings.defaults();
    Map<String, String> m = new LinkedHashMap<>();
    m.put("host", d.host);
    m.put("port", String.valueOf(d.port));
    m.put("max-body", String.valueOf(d.maxBodyBytes));
    m.put("max-batch", String.valueOf(d.maxBatch));
    m.put("max-key-length", String.valueOf(d.maxKeyLength));
    m.put("max-threads", String.valueOf(d.maxThreads));
    m.put("max-connections", String.valueOf(d.maxConnections));
    m.put("maximum-keys", String.valueOf(d.maximumKeys));
    m.put("postgres-pool-size", String.valueOf(d.postgresPoolSize));
    m.put("mysql-pool-size", String.valueOf(d.mysqlPoolSize));
    m.put("request-timeout", text(d.requestTimeout));
    m.put("idle-timeout", text(d.idleTimeout));
    m.put("reload-every", text(d.reloadEvery));
    m.put("shutdown-grace", text(d.shutdownGrace));
    m.put("otlp-step", text(d.otlpStep));
    m.put("envoy-algorithm", d.envoyAlgorithm);
    m.put("envoy-overrides", String.valueOf(d.envoyOverrides));
    m.put("envoy-headers", d.envoyHeaders);
    m.put("store-failure", "closed");
    m.put("store-timeout", text(DEFAULT_STORE_TIMEOUT));
    m.put("breaker-failure-rate", String.valueOf(breaker.failureRate()));
    m.put("breaker-minimum-calls", String.valueOf(breaker.minimumCalls()));
    m.put("breaker-window", text(breaker.window()));
    m.put("breaker-unreachable", String.valueOf(breaker.consecutiveUnavailable()));
    m.put("breaker-open", text(breaker.openFor()));
    m.put("lease-lifetime", text(lease.lifetime()));
    m.put("lease-share", String.valueOf(lease.excessShare()));
    m.put("lease-instances", String.valueOf(lease.instances()));
    return m;
  }

  /** A duration as the command line and the policies file write it: 250ms, 5s, 2m. */
  static String text(Duration d) {
    long ms = d.toMillis();
    return ms % 60_000 == 0 && ms > 0 ? ms / 60_000 + "m"
        : ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }

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

  /** Port of Envoy's rate limit service (gRPC); -1 (the default) serves none. */
  int grpcPort = -1;
  /** Envoy rate limit configuration (envoyproxy/ratelimit's format): a file or a directory. */
  Path envoyConfig;

  /**
   * Also serves Envoy's rate limit service API ({@code ShouldRateLimit}, gRPC) on this port (0
   * picks a free one), from {@link #envoyConfig}. Off by default.
   */
  public Options grpcPort(int port) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("grpcPort must be between 0 and 65535 but was " + port);
    }
    this.grpcPort = port;
    return this;
  }

  /** Envoy's rate limit configuration for {@link #grpcPort}: a file, or a directory of them. */
  public Options envoyConfig(Path path) {
    this.envoyConfig = Objects.requireNonNull(path, "path");
    return this;
  }

  /** The algorithm of Envoy descriptors that do not name one (default leaky-bucket). */
  String envoyAlgorithm = "leaky-bucket";
  /** Whether requests' per-descriptor limit overrides apply (default: yes, as in ratelimit). */
  boolean envoyOverrides = true;
  /** The headers Envoy answers carry: none (ratelimit's default), ratelimit, ietf. */
  String envoyHeaders = "none";
  /** Every Envoy answer OK, everything still decided and charged (ratelimit's SHADOW_MODE). */
  boolean envoyShadowMode;
  /** Files of one domain merge (ratelimit's MERGE_DOMAIN_CONFIG) instead of being refused. */
  boolean envoyMergeDomains;
  /** The wall clock (epoch milliseconds) that numbers Envoy's calendar windows. */
  LongSupplier wallMillis = System::currentTimeMillis;

  /**
   * The algorithm of Envoy descriptors whose {@code sluice:} extension names none: leaky-bucket
   * (the default), token-bucket, gcra, sliding-window, or fixed-window, which is
   * envoyproxy/ratelimit's own counter (calendar windows, refused hits counted).
   */
  public Options envoyAlgorithm(String algorithm) {
    Objects.requireNonNull(algorithm, "algorithm");
    if (!List.of("leaky-bucket", "token-bucket", "gcra", "fixed-window", "sliding-window")
        .contains(algorithm)) {
      throw new IllegalArgumentException("envoyAlgorithm must be leaky-bucket, token-bucket,"
          + " gcra, fixed-window or sliding-window but was '" + algorithm + "'");
    }
    this.envoyAlgorithm = algorithm;
    return this;
  }

  /**
   * Whether a request's per-descriptor {@code limit} override replaces the configured limit, as
   * envoyproxy/ratelimit does (default true; a node's {@code sluice: {overrides: false}} opts
   * out on its own).
   */
  public Options envoyOverrides(boolean apply) {
    this.envoyOverrides = apply;
    return this;
  }

  /**
   * The headers Envoy's answers ask it to add: {@code none} (the default, as
   * envoyproxy/ratelimit), {@code ratelimit} (its {@code LIMIT_RESPONSE_HEADERS_ENABLED}:
   * RateLimit-Limit, -Remaining, -Reset) or {@code ietf} (the HTTP API's RateLimit-Policy,
   * RateLimit, Retry-After).
   */
  public Options envoyHeaders(String headers) {
    Objects.requireNonNull(headers, "headers");
    if (!List.of("none", "ratelimit", "ietf").contains(headers)) {
      throw new IllegalArgumentException("envoyHeaders must be none, ratelimit or ietf but was '"
          + headers + "'");
    }
    this.envoyHeaders = headers;
    return this;
  }

  /**
   * Global shadow mode (envoyproxy/ratelimit's {@code SHADOW_MODE}): every answer's overall code
   * is OK; descriptors are still decided, charged and reported.
   */
  public Options envoyShadowMode(boolean shadow) {
    this.envoyShadowMode = shadow;
    return this;
  }

  /**
   * Whether files that name the same domain merge into it (envoyproxy/ratelimit's
   * {@code MERGE_DOMAIN_CONFIG}); off by default, when a domain twice is refused.
   */
  public Options envoyMergeDomains(boolean merge) {
    this.envoyMergeDomains = merge;
    return this;
  }

  /** Whether Envoy answers carry dynamic metadata (ratelimit's RESPONSE_DYNAMIC_METADATA). */
  boolean envoyResponseMetadata;

  /**
   * Whether Envoy's answers carry dynamic metadata, as envoyproxy/ratelimit's
   * {@code RESPONSE_DYNAMIC_METADATA} does: the domain, the descriptors, and the configured
   * {@code metadata} of those that passed. Off by default.
   */
  public Options envoyResponseMetadata(boolean on) {
    this.envoyResponseMetadata = on;
    return this;
  }

  /** Every Envoy descriptor in quota mode (ratelimit's QUOTA_MODE). */
  boolean envoyQuotaMode;

  /**
   * Global quota mode, as envoyproxy/ratelimit's {@code QUOTA_MODE}: every descriptor is in quota
   * mode, so an answer is OVER_LIMIT only when every descriptor of the request is. Off by
   * default.
   */
  public Options envoyQuotaMode(boolean on) {
    this.envoyQuotaMode = on;
    return this;
  }

  /** For tests: the wall clock, in epoch milliseconds, of Envoy's calendar windows. */
  Options wallMillis(LongSupplier wallMillis) {
    this.wallMillis = Objects.requireNonNull(wallMillis, "wallMillis");
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

  /**
   * Share limits through MySQL or MariaDB at this JDBC URL ({@code jdbc:mariadb:} or
   * {@code jdbc:mysql:}, naming the database; the tables are created if missing). The service
   * connects with MariaDB Connector/J, which takes both.
   */
  public Options mysql(String jdbcUrl) {
    if (jdbcUrl != null && !jdbcUrl.startsWith("jdbc:mariadb:")
        && !jdbcUrl.startsWith("jdbc:mysql:")) {
      throw new IllegalArgumentException("a MySQL or MariaDB JDBC URL starts with jdbc:mysql: or"
          + " jdbc:mariadb: but was '" + jdbcUrl + "'");
    }
    this.mysqlUrl = jdbcUrl;
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

  /**
   * Turn on the admin API ({@code GET /v1/top-refused}), which needs {@code Authorization: Bearer
   * <adminToken>}, a token of its own (default: off, the endpoints answer 404).
   */
  public Options adminToken(String adminToken) {
    if (adminToken != null && (adminToken.isBlank() || adminToken.length() < 16)) {
      throw new IllegalArgumentException("an admin token must have at least 16 characters");
    }
    this.adminToken = adminToken;
    return this;
  }

  /**
   * Push the service's meters over OTLP (http/protobuf) to {@code url}, such as {@code
   * http://collector:4318/v1/metrics} (default: not pushed; {@code /metrics} is always served).
   *
   * @throws IllegalArgumentException unless the URL is http or https
   */
  public Options otlpEndpoint(String url) {
    if (url != null && !url.startsWith("http://") && !url.startsWith("https://")) {
      throw new IllegalArgumentException("--otlp-endpoint must be an http:// or https:// URL,"
          + " such as http://collector:4318/v1/metrics, but was '" + url + "'");
    }
    this.otlpEndpoint = url;
    return this;
  }

  /**
   * How often the meters are pushed over OTLP (default 60 s; 1 s to 1 hour).
   *
   * @throws IllegalArgumentException naming the value when out of range
   */
  public Options otlpStep(Duration step) {
    Objects.requireNonNull(step, "step");
    if (step.compareTo(Duration.ofSeconds(1)) < 0 || step.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("--otlp-step must be between 1s and 1h but was "
          + text(step));
    }
    this.otlpStep = step;
    return this;
  }

  /** Largest accepted body (default 64 KiB); larger gets 413. */
  /**
   * Sheds checks by this process's CPU ({@code docs/server.md}): from {@code start} (a share of
   * the CPU the JVM may use) a check whose {@code X-Priority} is {@code sheddable} is refused at
   * random, all of them at half the band; {@code normal} ones (and checks without the header)
   * from half the band, all of them at {@code full}; {@code critical} ones never. A refusal is a
   * fast {@code 503} ({@code urn:sluice:problem:shedding}, {@code Retry-After: 1}), before the
   * body is read. Default: off.
   *
   * @throws IllegalArgumentException unless {@code 0 < start < full <= 1}
   */
  public Options shedCpu(double start, double full) {
    if (!(start > 0 && start < full && full <= 1)) {
      throw new IllegalArgumentException("shedCpu needs 0 < start < full <= 1 but was start "
          + start + ", full " + full);
    }
    this.shedCpu = new double[] {start, full};
    return this;
  }

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
    Objects.requireNonNull(every, "every");
    if (every.isNegative()) {
      throw new IllegalArgumentException("reloadEvery must not be negative but was " + every);
    }
    this.reloadEvery = every;
    return this;
  }

  /** What decisions get while a shared store fails (default fail closed: 503; or the file's). */
  public Options storeFailure(StoreFailure policy) {
    this.storeFailure = policy;
    return this;
  }

  /**
   * The longest one decision may take in the shared store (default 250 ms, or the file's
   * {@code store.timeout}): Redis' command timeout, PostgreSQL's whole-decision deadline.
   */
  public Options storeTimeout(Duration timeout) {
    if (timeout != null && (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(1)) > 0)) {
      throw new IllegalArgumentException("storeTimeout must be between 1 ms and 1 minute but was " + timeout);
    }
    this.storeTimeout = timeout;
    return this;
  }

  /**
   * Fleet mode for every policy on the shared store (default off): hot keys are answered from
   * leases of the shared bucket, without a store call per decision (docs/fleet.md). A policy
   * that cannot lease (a window limit, a cap below 2 units) keeps one call per decision, and the
   * service says so at start.
   */
  public Options leases(LeaseSettings settings) {
    this.leases = settings;
    return this;
  }

  /** When decisions stop calling a failing store (default {@link CircuitBreakerSettings#defaults()}). */
  public Options circuitBreaker(CircuitBreakerSettings settings) {
    this.circuitBreaker = settings;
    return this;
  }

  /**
   * The most time a request may take to arrive, head and body, from its first byte (default
   * 5 s): a client slower than that gets 408 and the connection is closed.
   */
  public Options requestTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "requestTimeout");
    if (timeout.toMillis() < 10 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException("requestTimeout must be between 10 ms and 10 minutes but was " + timeout);
    }
    this.requestTimeout = timeout;
    return this;
  }

  /** How long an idle keep-alive connection stays open (default 30 s). */
  public Options idleTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "idleTimeout");
    if (timeout.toMillis() < 10 || timeout.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("idleTimeout must be between 10 ms and 1 hour but was " + timeout);
    }
    this.idleTimeout = timeout;
    return this;
  }

  /** Most connections open at once (default 10,000); past it, new ones wait to be accepted. */
  public Options maxConnections(int n) {
    if (n < 1 || n > 1_000_000) {
      throw new IllegalArgumentException("maxConnections must be between 1 and 1000000 but was " + n);
    }
    this.maxConnections = n;
    return this;
  }

  /** Threads serving requests (default 200). */
  public Options maxThreads(int n) {
    if (n < 8 || n > 10_000) {
      throw new IllegalArgumentException("maxThreads must be between 8 and 10000 but was " + n);
    }
    this.maxThreads = n;
    return this;
  }

  /** Connections in the PostgreSQL pool (default 16). */
  public Options postgresPoolSize(int n) {
    if (n < 1 || n > 1_000) {
      throw new IllegalArgumentException("postgresPoolSize must be between 1 and 1000 but was " + n);
    }
    this.postgresPoolSize = n;
    return this;
  }

  /** Connections in the MySQL pool (default 16). */
  public Options mysqlPoolSize(int n) {
    if (n < 1 || n > 1_000) {
      throw new IllegalArgumentException("mysqlPoolSize must be between 1 and 1000 but was " + n);
    }
    this.mysqlPoolSize = n;
    return this;
  }

  /**
   * Keys each policy holds in memory (default 100,000; a policy's {@code maximumKeys} in the
   * file wins): with the in-memory store, or the in-memory fallback of a shared one. The heap
   * the service needs follows from it ({@link SluiceServer#heapBytesNeeded(Options)}).
   */
  public Options maximumKeys(long n) {
    if (n < 1 || n > 1_000_000_000L) {
      throw new IllegalArgumentException("maximumKeys must be between 1 and 1000000000 but was " + n);
    }
    this.maximumKeys = n;
    return this;
  }

  /** How long shutdown waits for requests in flight (default 10 s). */
  public Options shutdownGrace(Duration grace) {
    Objects.requireNonNull(grace, "grace");
    if (grace.isNegative()) {
      throw new IllegalArgumentException("shutdownGrace must not be negative but was " + grace);
    }
    this.shutdownGrace = grace;
    return this;
  }

  /**
   * Checks the settings that depend on one another, and reports every problem at once.
   *
   * @throws IllegalArgumentException listing each problem on its own line
   */
  public Options validate() {
    List<String> problems = new ArrayList<>();
    int stores = (redisUri != null ? 1 : 0) + (redisCluster != null ? 1 : 0)
        + (postgresUrl != null ? 1 : 0) + (mysqlUrl != null ? 1 : 0);
    if (stores > 1) {
      problems.add("choose one shared store: Redis, a Redis Cluster, PostgreSQL or MySQL");
    }
    if (stores == 0) {
      for (String[] set : new String[][] {
          {storeFailure != null ? "y" : null, "storeFailure (--store-failure)"},
          {storeTimeout != null ? "y" : null, "storeTimeout (--store-timeout)"},
          {circuitBreaker != null ? "y" : null, "circuitBreaker (--breaker-*)"},
          {leases != null ? "y" : null, "leases (--leases)"}}) {
        if (set[0] != null) {
          problems.add(set[1] + " applies to a shared store, and none was chosen (--redis,"
              + " --redis-cluster, --postgres or --mysql)");
        }
      }
    }
    if (storeFailure == StoreFailure.LOCAL_SHARE && leases == null) {
      problems.add("storeFailure local-share divides each limit among the instances of a fleet,"
          + " and leases (--leases) are off");
    }
    if (idleTimeout.compareTo(requestTimeout) < 0) {
      problems.add("idleTimeout (" + idleTimeout + ") must be at least requestTimeout ("
          + requestTimeout + "): an idle connection would be closed before a slow request's"
          + " deadline answers it");
    }
    if (token != null && token.isBlank()) {
      problems.add("token must not be blank");
    }
    if (adminToken != null && adminToken.equals(token)) {
      problems.add("the admin token must differ from the decision token (--token-file): a"
          + " client that may ask for decisions may not read who is refused");
    }
    if (grpcPort < 0 && envoyConfig != null) {
      problems.add("envoyConfig (--envoy-config) is served on grpcPort (--grpc-port), which is"
          + " off");
    }
    if (grpcPort > 0 && grpcPort == port) {
      problems.add("grpcPort and port must differ but both were " + port);
    }
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(String.join("\n", problems));
    }
    return this;
  }
}

package dev.sluice.spring;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.ConcurrencySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Sluice's settings in {@code application.yml}. Policies are written as in the rate-limit
 * service's policies file ({@code algorithm}, {@code capacity}, {@code rate}, {@code limit},
 * {@code window}, {@code penalty}, several {@code limits}); rules say which requests are held to
 * which policy.
 *
 * <pre>
 * sluice:
 *   policies:
 *     api: {algorithm: token-bucket, capacity: 10, rate: 10/s}
 *   rules:
 *     - {path: /api/**, policy: api, key: header:X-Api-Key}
 * </pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#everything-else">docs/spring.md, "Everything else"</a>.
 */
@ConfigurationProperties(prefix = "sluice", ignoreUnknownFields = false)
public class SluiceProperties {
  /** Whether Sluice is configured at all. */
  private boolean enabled = true;
  /** Shadow mode: decide, count and log, but never reject a request or add headers. */
  private boolean dryRun = false;
  /** Which rate-limit response fields to send: ietf (RateLimit, RateLimit-Policy), legacy (X-RateLimit-*) or none. */
  private String headers = "ietf";
  /**
   * Whether RateLimit-Policy and RateLimit fields added after Sluice's (a gateway copying a
   * downstream service's) join Sluice's as one list on one line.
   */
  private boolean headersCombine = false;

  public boolean isHeadersCombine() {
    return headersCombine;
  }

  public void setHeadersCombine(boolean headersCombine) {
    this.headersCombine = headersCombine;
  }
  /** What a request without a key gets: reject (400), allow (unlimited) or shared (one key for all). */
  private String missingKey = "reject";
  /** Proxies whose Forwarded / X-Forwarded-For headers are believed (CIDR blocks or addresses). */
  private List<String> trustedProxies = new ArrayList<>();
  /** IPv6 clients are keyed by this many leading bits of their address (a /64 is usually one subscriber). */
  private int ipv6PrefixBits = 64;
  /** The order of the servlet filter or WebFlux filter among the application's filters. */
  private int filterOrder = -100;
  /** Keys each policy holds in memory (the in-memory store, and the fallback failure policy). */
  private long maximumKeys = 1_000_000;
  /** Named policies: one limit inline, or several under 'limits' (all must admit). */
  private Map<String, Policy> policies = new LinkedHashMap<>();
  /** Which requests are held to which policy; the first rule that matches a request decides it. */
  private List<Rule> rules = new ArrayList<>();
  /** The store the limiters share. */
  private Store store = new Store();
  /** Concurrency limits: how many requests or calls may be in flight at once. */
  private Concurrency concurrency = new Concurrency();
  /** Shedding by the backend's health (docs/health.md): off until a signal is named. */
  private Health health = new Health();
  /** Quotas: a key's own limits as data, in the store (docs/quotas.md); off by default. */
  private Quotas quotas = new Quotas();
  /** The console page under Actuator ({@code sluiceconsole}); off by default. */
  private Console console = new Console();
  /** gRPC: the server interceptor's rules and the client interceptor (with sluice-grpc). */
  private Grpc grpc = new Grpc();
  /** Each decision on the current observation (Micrometer's Observation API, for tracing). */
  private ObservationSettings observation = new ObservationSettings();

  public ObservationSettings getObservation() {
    return observation;
  }

  public void setObservation(ObservationSettings observation) {
    this.observation = observation;
  }

  public Grpc getGrpc() {
    return grpc;
  }

  public void setGrpc(Grpc grpc) {
    this.grpc = grpc;
  }

  public Console getConsole() {
    return console;
  }

  public void setConsole(Console console) {
    this.console = console;
  }

  public Quotas getQuotas() {
    return quotas;
  }

  public void setQuotas(Quotas quotas) {
    this.quotas = quotas;
  }

  public Health getHealth() {
    return health;
  }

  public void setHealth(Health health) {
    this.health = health;
  }

  public Concurrency getConcurrency() {
    return concurrency;
  }

  public void setConcurrency(Concurrency concurrency) {
    this.concurrency = concurrency;
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public boolean isDryRun() {
    return dryRun;
  }

  public void setDryRun(boolean dryRun) {
    this.dryRun = dryRun;
  }

  public String getHeaders() {
    return headers;
  }

  public void setHeaders(String headers) {
    this.headers = headers;
  }

  public String getMissingKey() {
    return missingKey;
  }

  public void setMissingKey(String missingKey) {
    this.missingKey = missingKey;
  }

  public List<String> getTrustedProxies() {
    return trustedProxies;
  }

  public void setTrustedProxies(List<String> trustedProxies) {
    this.trustedProxies = trustedProxies;
  }

  public int getIpv6PrefixBits() {
    return ipv6PrefixBits;
  }

  public void setIpv6PrefixBits(int ipv6PrefixBits) {
    this.ipv6PrefixBits = ipv6PrefixBits;
  }

  public int getFilterOrder() {
    return filterOrder;
  }

  public void setFilterOrder(int filterOrder) {
    this.filterOrder = filterOrder;
  }

  public long getMaximumKeys() {
    return maximumKeys;
  }

  public void setMaximumKeys(long maximumKeys) {
    this.maximumKeys = maximumKeys;
  }

  public Map<String, Policy> getPolicies() {
    return policies;
  }

  public void setPolicies(Map<String, Policy> policies) {
    this.policies = policies;
  }

  public List<Rule> getRules() {
    return rules;
  }

  public void setRules(List<Rule> rules) {
    this.rules = rules;
  }

  public Store getStore() {
    return store;
  }

  public void setStore(Store store) {
    this.store = store;
  }

  /** One limit, in the words of the service's policies file. */
  public static class LimitProperties {
    /** leaky-bucket, token-bucket, gcra, fixed-window or sliding-window. */
    private String algorithm;
    /** Buckets: how much the bucket holds (GCRA: the burst). */
    private String capacity;
    /** GCRA: a synonym of capacity. */
    private String burst;
    /** Buckets: amount/period, such as 10/s, 100/1m, 1.5/s or 5/250ms. */
    private String rate;
    /** Windows: how much one window admits. */
    private String limit;
    /** Windows: the window's length, such as 250ms, 30s, 5m, 1h or 1d. */
    private String window;
    /** After a refusal, refuse everything for this long (such as 30s). */
    private String penalty;
    /** The limit's name in headers and metrics (default: the policy's name). */
    private String name;

    public String getAlgorithm() {
      return algorithm;
    }

    public void setAlgorithm(String algorithm) {
      this.algorithm = algorithm;
    }

    public String getCapacity() {
      return capacity;
    }

    public void setCapacity(String capacity) {
      this.capacity = capacity;
    }

    public String getBurst() {
      return burst;
    }

    public void setBurst(String burst) {
      this.burst = burst;
    }

    public String getRate() {
      return rate;
    }

    public void setRate(String rate) {
      this.rate = rate;
    }

    public String getLimit() {
      return limit;
    }

    public void setLimit(String limit) {
      this.limit = limit;
    }

    public String getWindow() {
      return window;
    }

    public void setWindow(String window) {
      this.window = window;
    }

    public String getPenalty() {
      return penalty;
    }

    public void setPenalty(String penalty) {
      this.penalty = penalty;
    }

    public String getName() {
      return name;
    }

    public void setName(String name) {
      this.name = name;
    }

    /** The fields that are set, by the names {@link dev.sluice.LimitSpec} reads. */
    Map<String, String> fields() {
      Map<String, String> f = new LinkedHashMap<>();
      put(f, "algorithm", algorithm);
      put(f, "capacity", capacity);
      put(f, "burst", burst);
      put(f, "rate", rate);
      put(f, "limit", limit);
      put(f, "window", window);
      put(f, "penalty", penalty);
      put(f, "name", name);
      return f;
    }

    private static void put(Map<String, String> f, String k, String v) {
      if (v != null) {
        f.put(k, v);
      }
    }
  }

  /** A named policy: one limit inline, or several under {@code limits}. */
  public static class Policy extends LimitProperties {
    /** Several limits, all of which must admit a request (instead of one inline limit). */
    private List<LimitProperties> limits = new ArrayList<>();

    public List<LimitProperties> getLimits() {
      return limits;
    }

    public void setLimits(List<LimitProperties> limits) {
      this.limits = limits;
    }
  }

  /** Which requests are held to which policy. */
  public static class Rule {
    /** A path pattern: * within a segment, /** for everything under a path. */
    private String path;
    /** HTTP methods the rule applies to (default: all). */
    private List<String> methods = new ArrayList<>();
    /** The policy the requests are held to. */
    private String policy;
    /** The key: ip (the client address), header:NAME (a header's value) or principal (the user). */
    private String key = "ip";
    /** A request's cost: a number, or header:NAME (a header holding a number). */
    private String cost = "1";
    /** Queue mode: a request that fits the bucket is held for its delay, so requests reach the application at the leak rate (bucket limits only). */
    private boolean queue;

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }

    public List<String> getMethods() {
      return methods;
    }

    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    public String getPolicy() {
      return policy;
    }

    public void setPolicy(String policy) {
      this.policy = policy;
    }

    public String getKey() {
      return key;
    }

    public void setKey(String key) {
      this.key = key;
    }

    public String getCost() {
      return cost;
    }

    public void setCost(String cost) {
      this.cost = cost;
    }

    public boolean isQueue() {
      return queue;
    }

    public void setQueue(boolean queue) {
      this.queue = queue;
    }
  }

  /**
   * Concurrency limits (docs/concurrency.md): named limits, and rules that hold requests to them.
   * Each limit is shared through the store the rate limits use when it is Redis or PostgreSQL,
   * with the same failure policy and breaker.
   */
  public static class Concurrency {
    /** Named limits: the most weight in flight per key, and how permits and waiters behave. */
    private Map<String, ConcurrencyLimit> limits = new LinkedHashMap<>();
    /** Which requests count against which limit; a request must get a permit from every rule that matches it. */
    private List<ConcurrencyRule> rules = new ArrayList<>();

    public Map<String, ConcurrencyLimit> getLimits() {
      return limits;
    }

    public void setLimits(Map<String, ConcurrencyLimit> limits) {
      this.limits = limits;
    }

    public List<ConcurrencyRule> getRules() {
      return rules;
    }

    public void setRules(List<ConcurrencyRule> rules) {
      this.rules = rules;
    }
  }

  /** One concurrency limit. */
  public static class ConcurrencyLimit {
    /** The most weight in flight per key (at least 1). */
    private Integer limit;
    /** How long a permit lasts without a release or a renewal (a holder that dies costs at most this). */
    private Duration lease = ConcurrencySpec.DEFAULT_LEASE;
    /** Acquisitions that may wait per key (0: none waits). */
    private int maxWaiters = ConcurrencyLimiter.DEFAULT_MAX_WAITERS;
    /** Which waiter a released permit goes to: fifo or lifo. */
    private String queueOrder = "fifo";
    /**
     * CoDel for each key's wait queue: its target wait (for example 5ms); with codel-interval.
     * Unset: off.
     */
    private Duration codelTarget;
    /** CoDel's interval (for example 100ms): waits above the target this long start shedding. */
    private Duration codelInterval;
    /** The share of each key's permits a priority may hold (critical, normal, sheddable: 0 to 1). */
    private Map<String, Double> shares = new LinkedHashMap<>();
    /**
     * Makes the keys partitions of groups that share a limit and borrow each other's idle
     * permits (unset: no group); limit is then each key's ceiling, and defaults to the group's.
     */
    private ConcurrencyGroupSettings group;
    /**
     * Fair queuing among flows for the waiters (unset: none): a rule's flow (such as
     * header:X-Tenant) names each request's flow, and one flow's flood does not starve the
     * others' waits.
     */
    private FairSettings fair;
    /** Keys held at once (in memory; on a store, keys with waiters here). */
    private long maximumKeys = ConcurrencySpec.DEFAULT_MAXIMUM_KEYS;
    /**
     * An adaptive limit instead of a fixed one: none (the default: limit is fixed), gradient or
     * aimd. With one, limit is not needed; min-limit, max-limit and initial-limit bound it.
     */
    private String adaptive = "none";
    /** An adaptive limit's floor (default 1). */
    private int minLimit = ConcurrencySpec.DEFAULT_MIN_LIMIT;
    /** An adaptive limit's ceiling (default 1000). */
    private int maxLimit = ConcurrencySpec.DEFAULT_MAX_LIMIT;
    /** An adaptive limit's start (default 20). */
    private int initialLimit = ConcurrencySpec.DEFAULT_INITIAL_LIMIT;

    public String getAdaptive() {
      return adaptive;
    }

    public void setAdaptive(String adaptive) {
      this.adaptive = adaptive;
    }

    public int getMinLimit() {
      return minLimit;
    }

    public void setMinLimit(int minLimit) {
      this.minLimit = minLimit;
    }

    public int getMaxLimit() {
      return maxLimit;
    }

    public void setMaxLimit(int maxLimit) {
      this.maxLimit = maxLimit;
    }

    public int getInitialLimit() {
      return initialLimit;
    }

    public void setInitialLimit(int initialLimit) {
      this.initialLimit = initialLimit;
    }

    public Integer getLimit() {
      return limit;
    }

    public void setLimit(Integer limit) {
      this.limit = limit;
    }

    public Duration getLease() {
      return lease;
    }

    public void setLease(Duration lease) {
      this.lease = lease;
    }

    public int getMaxWaiters() {
      return maxWaiters;
    }

    public void setMaxWaiters(int maxWaiters) {
      this.maxWaiters = maxWaiters;
    }

    public String getQueueOrder() {
      return queueOrder;
    }

    public Duration getCodelTarget() {
      return codelTarget;
    }

    public void setCodelTarget(Duration codelTarget) {
      this.codelTarget = codelTarget;
    }

    public Duration getCodelInterval() {
      return codelInterval;
    }

    public void setCodelInterval(Duration codelInterval) {
      this.codelInterval = codelInterval;
    }

    public void setQueueOrder(String queueOrder) {
      this.queueOrder = queueOrder;
    }

    public ConcurrencyGroupSettings getGroup() {
      return group;
    }

    public FairSettings getFair() {
      return fair;
    }

    public void setFair(FairSettings fair) {
      this.fair = fair;
    }

    public void setGroup(ConcurrencyGroupSettings group) {
      this.group = group;
    }

    public Map<String, Double> getShares() {
      return shares;
    }

    public void setShares(Map<String, Double> shares) {
      this.shares = shares;
    }

    public long getMaximumKeys() {
      return maximumKeys;
    }

    public void setMaximumKeys(long maximumKeys) {
      this.maximumKeys = maximumKeys;
    }
  }

  /** Fair queuing among flows for a concurrency limit's waiters (docs/concurrency.md). */
  public static class FairSettings {
    /** Queues a priority (default 1024); keep flows x hand-size / queues at 5 or less. */
    private Integer queues;
    /** Queues a flow is dealt (default 6). */
    private Integer handSize;
    /** Waiters a queue holds (default 100). */
    private Integer queueLength;
    /** How long a flow's demand is remembered: it decays by e every this long (default 10s). */
    private Duration memory;

    public Integer getQueues() {
      return queues;
    }

    public void setQueues(Integer queues) {
      this.queues = queues;
    }

    public Integer getHandSize() {
      return handSize;
    }

    public void setHandSize(Integer handSize) {
      this.handSize = handSize;
    }

    public Integer getQueueLength() {
      return queueLength;
    }

    public void setQueueLength(Integer queueLength) {
      this.queueLength = queueLength;
    }

    public Duration getMemory() {
      return memory;
    }

    public void setMemory(Duration memory) {
      this.memory = memory;
    }
  }

  /** Groups of a concurrency limit's keys: a shared limit, assured shares, borrowing. */
  public static class ConcurrencyGroupSettings {
    /** The permits in flight a group's keys hold at most, together (at least 1). */
    private Integer limit;
    /** Each key's assured share (default 0: everything it holds is borrowed). */
    private int assured;
    /** Assured shares of named keys, above the default. */
    private Map<String, Integer> assuredKeys = new LinkedHashMap<>();
    /** Permits only assured traffic fills (default: half the group's limit). */
    private Integer reserve;
    /** all: every key in one group (default); prefix: a key's group is the key up to the separator. */
    private String key = "all";
    /** With key: prefix, what ends a key's group (default "/": "acme/live" is in group "acme"). */
    private String separator;

    public Integer getLimit() {
      return limit;
    }

    public void setLimit(Integer limit) {
      this.limit = limit;
    }

    public int getAssured() {
      return assured;
    }

    public void setAssured(int assured) {
      this.assured = assured;
    }

    public Map<String, Integer> getAssuredKeys() {
      return assuredKeys;
    }

    public void setAssuredKeys(Map<String, Integer> assuredKeys) {
      this.assuredKeys = assuredKeys;
    }

    public Integer getReserve() {
      return reserve;
    }

    public void setReserve(Integer reserve) {
      this.reserve = reserve;
    }

    public String getKey() {
      return key;
    }

    public void setKey(String key) {
      this.key = key;
    }

    public String getSeparator() {
      return separator;
    }

    public void setSeparator(String separator) {
      this.separator = separator;
    }
  }

  /** Which requests count against a concurrency limit, and under which key. */
  public static class ConcurrencyRule {
    /** A path pattern: * within a segment, /** for everything under a path. */
    private String path;
    /** HTTP methods the rule applies to (default: all). */
    private List<String> methods = new ArrayList<>();
    /** The limit (under sluice.concurrency.limits) the requests count against. */
    private String limit;
    /** Whose requests count together: client (429 when refused), route or global (503: load shed). */
    private String per = "global";
    /** For per: client, the key: ip, header:NAME or principal. */
    private String key = "ip";
    /** How long a request may wait for a permit (0: refused at once). */
    private Duration maxWait = Duration.ZERO;
    /**
     * Headers that carry the request's deadline, read in order (grpc-timeout form such as 250m,
     * or milliseconds); a request waits at most until its deadline, and is refused at once when
     * its expected wait is longer. Empty: deadlines are not read.
     */
    private List<String> deadlineHeaders = new ArrayList<>(List.of("grpc-timeout"));
    /** A header whose value (critical, normal or sheddable) is the request's priority; absent or other: normal. */
    private String priorityHeader;
    /**
     * Each request's flow for the limit's fair queuing: ip, header:NAME or principal (unset: no
     * flow); the limit needs fair set.
     */
    private String flow;
    /** The Retry-After of a refusal. */
    private Duration retryAfter = Duration.ofSeconds(1);

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }

    public List<String> getMethods() {
      return methods;
    }

    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    public String getLimit() {
      return limit;
    }

    public void setLimit(String limit) {
      this.limit = limit;
    }

    public String getPer() {
      return per;
    }

    public void setPer(String per) {
      this.per = per;
    }

    public String getKey() {
      return key;
    }

    public void setKey(String key) {
      this.key = key;
    }

    public Duration getMaxWait() {
      return maxWait;
    }

    public void setMaxWait(Duration maxWait) {
      this.maxWait = maxWait;
    }

    public List<String> getDeadlineHeaders() {
      return deadlineHeaders;
    }

    public void setDeadlineHeaders(List<String> deadlineHeaders) {
      this.deadlineHeaders = deadlineHeaders;
    }

    public String getPriorityHeader() {
      return priorityHeader;
    }

    public String getFlow() {
      return flow;
    }

    public void setFlow(String flow) {
      this.flow = flow;
    }

    public void setPriorityHeader(String priorityHeader) {
      this.priorityHeader = priorityHeader;
    }

    public Duration getRetryAfter() {
      return retryAfter;
    }

    public void setRetryAfter(Duration retryAfter) {
      this.retryAfter = retryAfter;
    }
  }

  /** The store the limiters share. */
  public static class Store {
    /**
     * auto (Redis when the application has one, else PostgreSQL or MySQL as its DataSource's
     * database is, else memory), memory, redis, postgres or mysql.
     */
    private String type = "auto";
    /** The longest one decision may take on a shared store. */
    private Duration timeout = Duration.ofMillis(250);
    /** What requests get while the shared store fails: closed (refused), open (admitted) or fallback (decided in memory). */
    private String failure = "closed";
    /** Redis settings (when not taken from Spring Data Redis). */
    private Redis redis = new Redis();
    /** PostgreSQL settings (the DataSource is the application's). */
    private Postgres postgres = new Postgres();
    /** MySQL and MariaDB settings (the DataSource is the application's). */
    private Mysql mysql = new Mysql();
    /** When decisions stop calling a failing store (unset: Sluice's defaults). */
    private CircuitBreaker circuitBreaker = new CircuitBreaker();
    /**
     * The sluice health component's status while the shared store does not answer: auto (DOWN
     * when the failure policy is closed, UP when it keeps serving: open, fallback), down,
     * out-of-service or up.
     */
    private String healthWhenDown = "auto";

    public String getHealthWhenDown() {
      return healthWhenDown;
    }

    public void setHealthWhenDown(String healthWhenDown) {
      this.healthWhenDown = healthWhenDown;
    }

    public CircuitBreaker getCircuitBreaker() {
      return circuitBreaker;
    }

    public void setCircuitBreaker(CircuitBreaker circuitBreaker) {
      this.circuitBreaker = circuitBreaker;
    }

    public String getType() {
      return type;
    }

    public void setType(String type) {
      this.type = type;
    }

    public Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(Duration timeout) {
      this.timeout = timeout;
    }

    public String getFailure() {
      return failure;
    }

    public void setFailure(String failure) {
      this.failure = failure;
    }

    public Redis getRedis() {
      return redis;
    }

    public void setRedis(Redis redis) {
      this.redis = redis;
    }

    public Postgres getPostgres() {
      return postgres;
    }

    public void setPostgres(Postgres postgres) {
      this.postgres = postgres;
    }

    public Mysql getMysql() {
      return mysql;
    }

    public void setMysql(Mysql mysql) {
      this.mysql = mysql;
    }
  }

  /** The circuit breaker in front of the shared store; what is not set keeps Sluice's default. */
  public static class CircuitBreaker {
    /** Open when at least this share of the calls in the window failed (default 0.5). */
    private Double failureRate;
    /** ... and the window holds at least this many calls (default 20). */
    private Integer minimumCalls;
    /** The window failures are counted over (default 10s). */
    private Duration window;
    /** Open after this many calls in a row found the store unreachable (default 3). */
    private Integer consecutiveUnavailable;
    /** How long it stays open before one call probes the store (default 500ms). */
    private Duration openFor;

    public Double getFailureRate() {
      return failureRate;
    }

    public void setFailureRate(Double failureRate) {
      this.failureRate = failureRate;
    }

    public Integer getMinimumCalls() {
      return minimumCalls;
    }

    public void setMinimumCalls(Integer minimumCalls) {
      this.minimumCalls = minimumCalls;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }

    public Integer getConsecutiveUnavailable() {
      return consecutiveUnavailable;
    }

    public void setConsecutiveUnavailable(Integer consecutiveUnavailable) {
      this.consecutiveUnavailable = consecutiveUnavailable;
    }

    public Duration getOpenFor() {
      return openFor;
    }

    public void setOpenFor(Duration openFor) {
      this.openFor = openFor;
    }
  }

  /** Redis settings. */
  public static class Redis {
    /** redis://, rediss:// or redis-sentinel:// URI (default: Spring Data Redis's connection settings). */
    private String uri;
    /** Seed nodes of a Redis Cluster (redis://host:port), instead of uri. */
    private List<String> cluster = new ArrayList<>();
    /** The prefix of Sluice's keys. */
    private String prefix = "sluice:";
    /**
     * The longest Sluice's Redis client waits between reconnect attempts while Redis is down:
     * decisions resume at most this long after Redis answers again, whatever the outage's length.
     */
    private Duration reconnectDelayMax = Duration.ofMillis(250);

    public Duration getReconnectDelayMax() {
      return reconnectDelayMax;
    }

    public void setReconnectDelayMax(Duration reconnectDelayMax) {
      this.reconnectDelayMax = reconnectDelayMax;
    }

    public String getUri() {
      return uri;
    }

    public void setUri(String uri) {
      this.uri = uri;
    }

    public List<String> getCluster() {
      return cluster;
    }

    public void setCluster(List<String> cluster) {
      this.cluster = cluster;
    }

    public String getPrefix() {
      return prefix;
    }

    public void setPrefix(String prefix) {
      this.prefix = prefix;
    }
  }

  /** MySQL and MariaDB settings. */
  public static class Mysql {
    /** The table of buckets (the others are named after it). */
    private String table = "sluice_buckets";
    /** Create the tables and procedures when they are missing. */
    private boolean createSchema = true;
    /** How often expired rows are deleted. */
    private Duration pruneEvery = Duration.ofMinutes(1);

    public String getTable() {
      return table;
    }

    public void setTable(String table) {
      this.table = table;
    }

    public boolean isCreateSchema() {
      return createSchema;
    }

    public void setCreateSchema(boolean createSchema) {
      this.createSchema = createSchema;
    }

    public Duration getPruneEvery() {
      return pruneEvery;
    }

    public void setPruneEvery(Duration pruneEvery) {
      this.pruneEvery = pruneEvery;
    }
  }

  /** PostgreSQL settings. */
  public static class Postgres {
    /** The table of buckets. */
    private String table = "sluice_buckets";
    /** Create the table and functions when they are missing. */
    private boolean createSchema = true;
    /** How often expired buckets are deleted. */
    private Duration pruneEvery = Duration.ofMinutes(1);

    public String getTable() {
      return table;
    }

    public void setTable(String table) {
      this.table = table;
    }

    public boolean isCreateSchema() {
      return createSchema;
    }

    public void setCreateSchema(boolean createSchema) {
      this.createSchema = createSchema;
    }

    public Duration getPruneEvery() {
      return pruneEvery;
    }

    public void setPruneEvery(Duration pruneEvery) {
      this.pruneEvery = pruneEvery;
    }
  }

  /** Shedding by the backend's health: the signals and how the shedder decides. */
  public static class ObservationSettings {
    /**
     * Whether each policy's decisions are recorded on the current observation (the policy, the
     * outcome, the deciding limit), when the application has an ObservationRegistry.
     */
    private boolean enabled = true;
    /** Whether the key is recorded too (a high-cardinality value; keys can be personal data). */
    private boolean includeKeys;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isIncludeKeys() {
      return includeKeys;
    }

    public void setIncludeKeys(boolean includeKeys) {
      this.includeKeys = includeKeys;
    }
  }

  public static class Grpc {
    /** The server interceptor ({@code SluiceServerInterceptor} bean): off without rules. */
    private GrpcServer server = new GrpcServer();
    /** The client interceptor ({@code SluiceClientInterceptor} bean): off until one part is on. */
    private GrpcClient client = new GrpcClient();

    public GrpcServer getServer() {
      return server;
    }

    public void setServer(GrpcServer server) {
      this.server = server;
    }

    public GrpcClient getClient() {
      return client;
    }

    public void setClient(GrpcClient client) {
      this.client = client;
    }
  }

  public static class GrpcServer {
    /** The rules, decided in order: rate rules (policy) before concurrency rules (limit). */
    private List<GrpcRule> rules = new ArrayList<>();
    /** How long a call may wait for a concurrency permit (never past its deadline). */
    private Duration maxWait = Duration.ZERO;
    /** The metadata key of a call's priority: critical, normal or sheddable. */
    private String priorityHeader = "x-priority";

    public List<GrpcRule> getRules() {
      return rules;
    }

    public void setRules(List<GrpcRule> rules) {
      this.rules = rules;
    }

    public Duration getMaxWait() {
      return maxWait;
    }

    public void setMaxWait(Duration maxWait) {
      this.maxWait = maxWait;
    }

    public String getPriorityHeader() {
      return priorityHeader;
    }

    public void setPriorityHeader(String priorityHeader) {
      this.priorityHeader = priorityHeader;
    }
  }

  public static class GrpcRule {
    /** The methods: package.Service/Method, package.Service/* (default: every method). */
    private String methods;
    /** A rate policy (under sluice.policies): one unit per call. */
    private String policy;
    /** A concurrency limit (under sluice.concurrency.limits): a permit for each call's life. */
    private String limit;
    /** The call's key: method, service, peer, metadata:NAME or global. */
    private String key = "method";

    public String getMethods() {
      return methods;
    }

    public void setMethods(String methods) {
      this.methods = methods;
    }

    public String getPolicy() {
      return policy;
    }

    public void setPolicy(String policy) {
      this.policy = policy;
    }

    public String getLimit() {
      return limit;
    }

    public void setLimit(String limit) {
      this.limit = limit;
    }

    public String getKey() {
      return key;
    }

    public void setKey(String key) {
      this.key = key;
    }
  }

  public static class GrpcClient {
    /** Client-side adaptive throttling: send up to k times what the backend accepts. */
    private Throttle throttle = new Throttle();
    /** Retries of unary calls within a budget. */
    private Budget retryBudget = new Budget();
    /** Attempts of a unary call in all (with the retry budget). */
    private int maxAttempts = 3;

    public Throttle getThrottle() {
      return throttle;
    }

    public void setThrottle(Throttle throttle) {
      this.throttle = throttle;
    }

    public Budget getRetryBudget() {
      return retryBudget;
    }

    public void setRetryBudget(Budget retryBudget) {
      this.retryBudget = retryBudget;
    }

    public int getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
    }
  }

  public static class Throttle {
    /** Whether calls are throttled on the client. */
    private boolean enabled;
    /** The multiplier K (2). */
    private double k = 2;
    /** The window the counts cover (2m). */
    private Duration window = Duration.ofMinutes(2);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public double getK() {
      return k;
    }

    public void setK(double k) {
      this.k = k;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }
  }

  public static class Budget {
    /** Whether unary calls are retried within the budget. */
    private boolean enabled;
    /** Retries per success over the window (0.1). */
    private double ratio = 0.1;
    /** Retries a second allowed whatever succeeds (10). */
    private double minPerSecond = 10;
    /** The window (10s). */
    private Duration window = Duration.ofSeconds(10);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public double getRatio() {
      return ratio;
    }

    public void setRatio(double ratio) {
      this.ratio = ratio;
    }

    public double getMinPerSecond() {
      return minPerSecond;
    }

    public void setMinPerSecond(double minPerSecond) {
      this.minPerSecond = minPerSecond;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }
  }

  public static class Console {
    /**
     * Whether Actuator's {@code sluiceconsole} endpoint serves the console page and its document
     * (the policies' keys refused most are then counted, in a bounded sketch per policy).
     */
    private boolean enabled;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  public static class Quotas {
    /**
     * Whether the limiters read quotas from the store (Redis, PostgreSQL, MySQL; memory with the
     * in-memory store), and Actuator's {@code sluicequotas} endpoint lists them.
     */
    private boolean enabled;
    /** How often the quotas are read again when they changed (500ms). */
    private Duration refresh = Duration.ofMillis(500);
    /** Whether Actuator's {@code sluicequotas} endpoint may set and remove quotas, too. */
    private boolean writeEnabled;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getRefresh() {
      return refresh;
    }

    public void setRefresh(Duration refresh) {
      this.refresh = refresh;
    }

    public boolean isWriteEnabled() {
      return writeEnabled;
    }

    public void setWriteEnabled(boolean writeEnabled) {
      this.writeEnabled = writeEnabled;
    }
  }

  public static class Health {
    /**
     * The signals and their bands: built-in container-cpu, process-cpu, cpu-pressure, gc, heap,
     * hikari, web-server, event-loop, or the name of a HealthSignal bean of the application.
     */
    private List<HealthBand> signals = new ArrayList<>();
    /** The request header that says a request's priority: critical, normal or sheddable. */
    private String priorityHeader = "X-Priority";
    /** The share of a band a shedding signal falls below its start before it stops (0.05). */
    private Double hysteresis;
    /** How often the signals are read, at most (100ms). */
    private Duration sampleEvery;
    /** Shed only while the work in flight exceeds what the backend serves well (Little's law). */
    private boolean guard = true;
    /** Whether critical work is shed too, at full pressure only. */
    private boolean shedCritical;

    public List<HealthBand> getSignals() {
      return signals;
    }

    public void setSignals(List<HealthBand> signals) {
      this.signals = signals;
    }

    public String getPriorityHeader() {
      return priorityHeader;
    }

    public void setPriorityHeader(String priorityHeader) {
      this.priorityHeader = priorityHeader;
    }

    public Double getHysteresis() {
      return hysteresis;
    }

    public void setHysteresis(Double hysteresis) {
      this.hysteresis = hysteresis;
    }

    public Duration getSampleEvery() {
      return sampleEvery;
    }

    public void setSampleEvery(Duration sampleEvery) {
      this.sampleEvery = sampleEvery;
    }

    public boolean isGuard() {
      return guard;
    }

    public void setGuard(boolean guard) {
      this.guard = guard;
    }

    public boolean isShedCritical() {
      return shedCritical;
    }

    public void setShedCritical(boolean shedCritical) {
      this.shedCritical = shedCritical;
    }
  }

  /** One health signal and its band. */
  public static class HealthBand {
    /**
     * container-cpu, process-cpu, cpu-pressure, gc, heap, hikari (with HikariCP), web-server,
     * event-loop (with Reactor Netty), or the name of a HealthSignal bean.
     */
    private String signal;
    /** Where shedding starts. */
    private Double start;
    /** Where all but critical work is shed (above start). */
    private Double full;

    public String getSignal() {
      return signal;
    }

    public void setSignal(String signal) {
      this.signal = signal;
    }

    public Double getStart() {
      return start;
    }

    public void setStart(Double start) {
      this.start = start;
    }

    public Double getFull() {
      return full;
    }

    public void setFull(Double full) {
      this.full = full;
    }
  }
}

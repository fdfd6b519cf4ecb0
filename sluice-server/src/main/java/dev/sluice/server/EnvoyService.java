package dev.sluice.server;

import com.google.protobuf.Duration;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.TextFormat;
import com.google.protobuf.Value;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.RateLimiter;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.internal.StoreKeys;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Envoy's {@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit}, answered from an
 * {@link EnvoyConfig} as envoyproxy/ratelimit answers it (its {@code src/service/ratelimit.go} and
 * {@code src/limiter/base_limiter.go}); docs/envoy.md lists what differs.
 *
 * <ul>
 *   <li>Each descriptor is decided on its own: one over its limit does not stop the others from
 *       being charged. The overall code is OVER_LIMIT if a descriptor not in quota mode is, or
 *       if every descriptor in quota mode is.
 *   <li>{@code hits_addend}: the descriptor's if set (0: a check that charges nothing), else the
 *       request's (0 counts 1); a uint64 is read unsigned.
 *   <li>A descriptor with no limit (no match, an unknown domain, no entries, or a limit another
 *       one {@code replaces}): OK without a current limit; an {@code unlimited} one: OK with
 *       {@code limit_remaining} 4294967295.
 *   <li>OVER_LIMIT answers {@code limit_remaining} 0; {@code current_limit.name} is the
 *       configured name, else empty. {@code shadow_mode}: decided and charged, answered OK.
 *   <li>A request's per-descriptor {@code limit} override applies, as in ratelimit, unless
 *       turned off (the service's setting, or the node's {@code sluice: {overrides: false}}).
 *   <li>In {@code fixed-window} mode the counter is ratelimit's: one per calendar unit of the
 *       wall clock, charged before it is compared (a refused hit counts too),
 *       {@code duration_until_reset} to the end of the calendar unit. The default leaky bucket
 *       charges only what it admits, and its reset is when the bucket is empty again.
 *   <li>A descriptor's key of more than 1,024 bytes of UTF-8 (or one a shared store cannot hold)
 *       is limited under the SHA-256 digest of its domain and entries, never refused.
 *   <li>An empty domain or no descriptors: INVALID_ARGUMENT (ratelimit answers an error too).
 * </ul>
 */
final class EnvoyService extends RateLimitServiceGrpc.RateLimitServiceImplBase {
  /** Joins a descriptor's entries into one limiter key. */
  static final char SEPARATOR = '\u001f';

  /** The most distinct limit overrides one configuration keeps limiters for. */
  static final int MAX_OVERRIDES = 1_000;

  /** {@code limit_remaining} of an unlimited descriptor: the wire's uint32 maximum. */
  static final int UNLIMITED_REMAINING = -1;   // 4294967295 as an unsigned int

  private static final System.Logger LOG = System.getLogger(EnvoyService.class.getName());

  /** Which headers the answer asks Envoy to add to the client's response. */
  enum Headers {
    /** None: envoyproxy/ratelimit's default. */
    NONE,
    /**
     * envoyproxy/ratelimit's {@code LIMIT_RESPONSE_HEADERS_ENABLED}: {@code RateLimit-Limit},
     * {@code RateLimit-Remaining}, {@code RateLimit-Reset} of the descriptor closest to its limit.
     */
    RATELIMIT,
    /**
     * The HTTP API's: {@code RateLimit-Policy}, {@code RateLimit} and, over the limit,
     * {@code Retry-After}.
     */
    IETF
  }

  /**
   * The service's settings: whether requests' limit overrides apply, the headers, global shadow
   * mode (every answer OK, everything still decided and charged), the wall clock (epoch
   * milliseconds) that numbers the calendar windows.
   */
  record Settings(boolean overrides, Headers headers, boolean shadowMode, String algorithm,
      LongSupplier wallMillis, boolean responseMetadata, boolean quotaMode) {
    Settings(boolean overrides, Headers headers, boolean shadowMode, String algorithm,
        LongSupplier wallMillis) {
      this(overrides, headers, shadowMode, algorithm, wallMillis, false, false);
    }

    static Settings defaults() {
      return new Settings(true, Headers.NONE, false, "leaky-bucket", System::currentTimeMillis);
    }
  }

  /** The configuration, one limiter per limited node, and the limiters of the overrides. */
  record State(EnvoyConfig config, Map<EnvoyConfig.DescriptorNode, RateLimiter> limiters,
      ConcurrentHashMap<String, RateLimiter> overrides) {}

  private volatile State state;
  private final BiFunction<String, Limit, RateLimiter> limiterFor;
  private final Metrics metrics;
  private final long ticksPerSecond;
  private final Settings settings;
  /** The policies of Sluice's policies file, by name, for descriptors that name one. */
  private final Function<String, PolicyRegistry.Policy> policies;
  private final LogLimit ignoredOverrides = new LogLimit();

  /**
   * {@code limiterFor} makes the limiter of a limit, its keys under the given name (the store and
   * failure policy are the caller's).
   */
  EnvoyService(EnvoyConfig config, BiFunction<String, Limit, RateLimiter> limiterFor,
      Metrics metrics, long ticksPerSecond, Function<String, PolicyRegistry.Policy> policies,
      Settings settings) {
    this.policies = policies;
    this.limiterFor = limiterFor;
    this.metrics = metrics;
    this.ticksPerSecond = ticksPerSecond;
    this.settings = settings;
    this.state = build(config, null);
  }

  /**
   * The limiters of {@code config}: a limited node whose path and limit are those of a node of
   * {@code before} keeps that node's limiter, and so its keys' state.
   */
  // IdentityHashMapUsage: descriptor nodes are keyed by identity: equal nodes of two configurations are two limiters
  @SuppressWarnings("IdentityHashMapUsage")
  private State build(EnvoyConfig config, State before) {
    Map<String, Map.Entry<EnvoyConfig.DescriptorNode, RateLimiter>> old = new HashMap<>();
    if (before != null) {
      for (Map.Entry<EnvoyConfig.DescriptorNode, RateLimiter> e : before.limiters().entrySet()) {
        old.put(e.getKey().path, e);
      }
    }
    Map<EnvoyConfig.DescriptorNode, RateLimiter> limiters = new IdentityHashMap<>();
    for (EnvoyConfig.DescriptorNode n : config.limited()) {
      Map.Entry<EnvoyConfig.DescriptorNode, RateLimiter> kept = old.get(n.path);
      limiters.put(n, kept != null && kept.getKey().limit.equals(n.limit) ? kept.getValue()
          : limiterFor.apply("envoy:" + n.path, n.limit));
    }
    return new State(config, limiters, new ConcurrentHashMap<>());
  }

  /**
   * Applies a new configuration to the next request; limiters of unchanged limits are kept, the
   * others closed.
   */
  void reload(EnvoyConfig next) {
    State before = state;
    State after = build(next, before);
    state = after;
    Set<RateLimiter> kept = Collections.newSetFromMap(new IdentityHashMap<>());
    kept.addAll(after.limiters().values());
    for (RateLimiter l : before.limiters().values()) {
      if (!kept.contains(l)) {
        l.close();
      }
    }
    before.overrides().values().forEach(RateLimiter::close);
  }

  /** Closes every limiter. */
  void close() {
    for (RateLimiter l : state.limiters().values()) {
      l.close();
    }
    state.overrides().values().forEach(RateLimiter::close);
  }

  /** Stands for a request whose bytes were not a {@code RateLimitRequest}. */
  private static final RateLimitRequest MALFORMED = RateLimitRequest.newBuilder()
      .setDomain("\u0000malformed").build();
  private final LogLimit malformedLog = new LogLimit();

  /**
   * The service as it is served: a request that does not parse is answered INVALID_ARGUMENT,
   * counted ({@code sluice_envoy_malformed_requests_total}) and logged in one line at most once a
   * minute, where grpc-java would log each one as an error with a stack trace (a client could
   * fill the disk).
   */
  ServerServiceDefinition definition() {
    ServerServiceDefinition bound = bindService();
    MethodDescriptor<RateLimitRequest, RateLimitResponse> method =
        RateLimitServiceGrpc.getShouldRateLimitMethod();
    MethodDescriptor.Marshaller<RateLimitRequest> strict = method.getRequestMarshaller();
    MethodDescriptor.Marshaller<RateLimitRequest> lenient = new MethodDescriptor
        .Marshaller<>() {
      @Override
      public InputStream stream(RateLimitRequest value) {
        return strict.stream(value);
      }

      @Override
      public RateLimitRequest parse(InputStream stream) {
        try {
          return strict.parse(stream);
        } catch (RuntimeException e) {
          if (metrics != null) {
            metrics.envoyMalformed.increment();
          }
          if (malformedLog.allow()) {
            LOG.log(System.Logger.Level.WARNING, "a ShouldRateLimit request was not a valid"
                + " RateLimitRequest ({0}); answered INVALID_ARGUMENT; further ones are counted"
                + " in sluice_envoy_malformed_requests_total and logged at most once a minute",
                e.getMessage());
          }
          return MALFORMED;
        }
      }
    };
    @SuppressWarnings("unchecked")
    ServerCallHandler<RateLimitRequest, RateLimitResponse> handler =
        (ServerCallHandler<RateLimitRequest, RateLimitResponse>) bound
            .getMethod(method.getFullMethodName()).getServerCallHandler();
    return ServerServiceDefinition.builder(RateLimitServiceGrpc.SERVICE_NAME)
        .addMethod(method.toBuilder().setRequestMarshaller(lenient).build(), handler).build();
  }

  /**
   * Answers without holding the calling thread (a Netty event loop): each limited descriptor is
   * decided asynchronously, which in memory completes at once and on a shared store completes on
   * the store's own threads; the answer is sent when every one has completed.
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  // ReferenceEquality: MALFORMED is a marker instance
  @SuppressWarnings({"FutureReturnValueIgnored", "ReferenceEquality"})
  @Override
  public void shouldRateLimit(RateLimitRequest request,
      StreamObserver<RateLimitResponse> responses) {
    if (request == MALFORMED) {
      responses.onError(Status.INVALID_ARGUMENT.withDescription("not a valid RateLimitRequest")
          .asRuntimeException());
      return;
    }
    Item[] items;
    try {
      items = start(request);
    } catch (IllegalArgumentException e) {
      responses.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    CompletableFuture<?>[] all = new CompletableFuture<?>[items.length];
    for (int i = 0; i < items.length; i++) {
      all[i] = items[i].decision;
    }
    CompletableFuture.allOf(all).whenComplete((ignored, failure) -> {
      if (failure != null) {
        responses.onError(Status.INTERNAL.withDescription(String.valueOf(failure))
            .asRuntimeException());
        return;
      }
      responses.onNext(finish(request, items));
      responses.onCompleted();
    });
  }

  /** One descriptor of a request: what applies to it and its decision under way. */
  private static final class Item {
    EnvoyConfig.DescriptorNode node;
    /** The limit applied (the node's, or an override's); null for none. */
    EnvoyConfig.RateLimitDef limit;
    /** Null when the limit has none (0 per unit: always over). */
    RateLimiter limiter;
    /** The Sluice policy the descriptor is held to, by name, and as resolved (null if gone). */
    String policy;
    PolicyRegistry.Policy resolved;
    boolean windowed;
    boolean shadow;
    boolean quota;
    boolean unlimited;
    boolean zeroHits;
    CompletableFuture<Decision> decision = CompletableFuture.completedFuture(null);
  }

  private Item[] start(RateLimitRequest request) {
    if (request.getDomain().isEmpty()) {
      throw new IllegalArgumentException("rate limit domain must not be empty");
    }
    if (request.getDescriptorsCount() == 0) {
      throw new IllegalArgumentException("rate limit descriptor list must not be empty");
    }
    State s = state;
    String domain = request.getDomain();
    boolean known = s.config().domains().containsKey(domain);
    int n = request.getDescriptorsCount();
    Item[] items = new Item[n];
    String[] keys = new String[n];
    double[] costs = new double[n];
    Set<String> replaced = new HashSet<>();
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor descriptor = request.getDescriptors(i);
      Item item = new Item();
      items[i] = item;
      int entries = descriptor.getEntriesCount();
      String[] k = new String[entries];
      String[] v = new String[entries];
      for (int e = 0; e < entries; e++) {
        k[e] = descriptor.getEntries(e).getKey();
        v[e] = descriptor.getEntries(e).getValue();
      }
      long hits = descriptor.hasHitsAddend() ? descriptor.getHitsAddend().getValue()
          : Math.max(1, Integer.toUnsignedLong(request.getHitsAddend()));
      item.zeroHits = hits == 0;
      costs[i] = hits < 0 ? 0x1p64 + hits : hits;   // a uint64, read unsigned
      if (!known) {
        continue;
      }
      EnvoyConfig.Match match = s.config().match(domain, k, v);
      item.node = match.node();
      if (descriptor.hasLimit() && overridesApply(item.node)) {
        EnvoyConfig.Unit unit = unitOf(descriptor.getLimit());
        if (unit != null) {
          long perUnit = Integer.toUnsignedLong(descriptor.getLimit().getRequestsPerUnit());
          item.limit = new EnvoyConfig.RateLimitDef(perUnit, unit, false, null, List.of());
          String algorithm = item.node != null ? item.node.algorithm : settings.algorithm();
          item.windowed = "fixed-window".equals(algorithm);
          item.limiter = perUnit == 0 ? null : override(s, algorithm, perUnit, unit);
          keys[i] = rawKey(domain, k, v, null);
          continue;
        }
        if (ignoredOverrides.allow()) {
          LOG.log(System.Logger.Level.WARNING, "a limit override with unit {0} was ignored (the"
              + " configured limit applies); further ones are logged at most once a minute",
              descriptor.getLimit().getUnitValue());
        }
      }
      EnvoyConfig.DescriptorNode node = item.node;
      if (node == null) {
        continue;
      }
      if (node.rateLimit != null) {
        replaced.addAll(node.rateLimit.replaces());
      }
      if (node.policy != null) {
        item.policy = node.policy;
        keys[i] = rawKey(domain, k, v, match.shared());
        continue;
      }
      item.limit = node.rateLimit;
      item.shadow = node.shadow;
      item.quota = node.quota;
      if (node.rateLimit.unlimited()) {
        item.unlimited = true;
        continue;
      }
      item.windowed = node.windowed();
      item.limiter = node.limit == null ? null : s.limiters().get(node);
      keys[i] = rawKey(domain, k, v, match.shared());
    }
    // limits that another descriptor's limit replaces do not apply
    for (Item item : items) {
      if (item.limit != null && item.limit.name() != null && replaced.contains(item.limit.name())
          && !item.unlimited) {
        item.limit = null;
        item.limiter = null;
      }
    }
    long nowMillis = settings.wallMillis().getAsLong();
    for (int i = 0; i < n; i++) {
      try {
        decide(items[i], keys[i], costs[i], nowMillis);
      } catch (RuntimeException e) {
        overOnFailure(items[i], e);
      }
      // a decision that fails unexpectedly answers that descriptor OVER_LIMIT: never a failed
      // call, which Envoy's failure_mode_deny: false would let through
      Item item = items[i];
      item.decision = item.decision.exceptionally(e -> {
        overOnFailure(item, e);
        return null;
      });
    }
    return items;
  }

  private final LogLimit failures = new LogLimit();

  /** Marks a descriptor whose decision failed as over its limit, and logs it now and then. */
  private void overOnFailure(Item item, Throwable e) {
    if (item.policy != null) {
      item.limit = new EnvoyConfig.RateLimitDef(0, EnvoyConfig.Unit.SECOND, false, item.policy,
          List.of());
      item.policy = null;
    }
    item.limiter = null;
    if (failures.allow()) {
      LOG.log(System.Logger.Level.WARNING, "a descriptor could not be decided and was answered"
          + " OVER_LIMIT; further ones are logged at most once a minute", e);
    }
  }

  /** Starts one descriptor's decision, if it has a limit. */
  private void decide(Item item, String rawKey, double hits, long nowMillis) {
    if (item.policy != null) {
      PolicyRegistry.Policy policy = policies.apply(item.policy);
      if (policy == null) {
        throw new IllegalStateException("policy " + item.policy + " is gone (a reload this"
            + " request raced with)");
      }
      item.resolved = policy;
      item.limiter = policy.limiter();
      double cost = Math.min(hits, 2 * most(policy.limits()) + 2);
      String key = storeKey(rawKey);
      item.decision = item.zeroHits ? item.limiter.checkAsync(key, 1)
          : item.limiter.tryAcquireAsync(key, cost);
    } else if (item.limit != null && item.limiter != null) {
      // beyond twice the capacity a cost is refused all the same (the fixed window's count of
      // perUnit + 1 already means "over"), and stays far from overflowing any clock
      double cost = Math.min(hits, 2 * Math.max(item.limit.requestsPerUnit(),
          item.node != null && item.node.limit != null ? item.node.limit.capacity() : 0) + 2);
      String key = storeKey(item.windowed ? rawKey + SEPARATOR + "@"
          + Math.floorDiv(Math.floorDiv(nowMillis, 1000), item.limit.unit().seconds) : rawKey);
      item.decision = item.zeroHits ? item.limiter.checkAsync(key, 1)
          : item.windowed ? item.limiter.fillUpAsync(key, cost)
          : item.limiter.tryAcquireAsync(key, cost);
    }
  }

  /** The largest capacity of these limits, in units of cost. */
  private static double most(List<Limit> limits) {
    double most = 1;
    for (Limit l : limits) {
      most = Math.max(most, l.capacity());
    }
    return most;
  }

  /** Whether a request's limit override applies to a descriptor that reached {@code node}. */
  private boolean overridesApply(EnvoyConfig.DescriptorNode node) {
    return (node != null && node.overrides != null) ? node.overrides : settings.overrides();
  }

  /** The unit of an override, by its number on the wire (WEEK too); null for an unknown one. */
  private static EnvoyConfig.Unit unitOf(RateLimitDescriptor.RateLimitOverride o) {
    return switch (o.getUnitValue()) {
      case 1 -> EnvoyConfig.Unit.SECOND;
      case 2 -> EnvoyConfig.Unit.MINUTE;
      case 3 -> EnvoyConfig.Unit.HOUR;
      case 4 -> EnvoyConfig.Unit.DAY;
      case 5 -> EnvoyConfig.Unit.MONTH;
      case 6 -> EnvoyConfig.Unit.YEAR;
      case 7 -> EnvoyConfig.Unit.WEEK;
      default -> null;
    };
  }

  /**
   * The bucket key of a descriptor, as a store holds it: {@link #rawKey} through
   * {@link #storeKey}.
   */
  static String key(String domain, String[] keys, String[] values, String[] shared) {
    return storeKey(rawKey(domain, keys, values, shared));
  }

  /**
   * A descriptor's domain and entries, a {@code share_threshold} wildcard's pattern standing for
   * the value it matched.
   */
  static String rawKey(String domain, String[] keys, String[] values, String[] shared) {
    StringBuilder b = new StringBuilder(domain.length() + 16 * keys.length).append(domain);
    for (int i = 0; i < keys.length; i++) {
      b.append(SEPARATOR).append(keys[i]).append('=')
          .append(shared != null && shared[i] != null ? shared[i] : values[i]);
    }
    return b.toString();
  }

  /**
   * {@code key}, or, when a shared store cannot hold it (over 1,024 bytes of UTF-8, a U+0000),
   * the SHA-256 digest of it: two keys share a bucket only if their digests collide, with odds of
   * about 2^-128 for any two.
   */
  static String storeKey(String key) {
    if (StoreKeys.problem(key) == null) {
      return key;
    }
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8));
      return "sha256:" + HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /**
   * The limiter of a limit override: one per distinct algorithm, rate and unit, at most
   * {@link #MAX_OVERRIDES} per configuration; beyond them, null (the descriptor is answered
   * OVER_LIMIT: an override no limiter can hold is not let through unlimited).
   */
  private RateLimiter override(State s, String algorithm, long perUnit, EnvoyConfig.Unit unit) {
    String name = "override/" + algorithm + "/" + perUnit + "-per-"
        + unit.name().toLowerCase(Locale.ROOT);
    RateLimiter limiter = s.overrides().get(name);
    if (limiter != null) {
      return limiter;
    }
    if (s.overrides().size() >= MAX_OVERRIDES) {
      if (ignoredOverrides.allow()) {
        LOG.log(System.Logger.Level.WARNING, "more than {0} distinct limit overrides: {1} is"
            + " answered OVER_LIMIT", MAX_OVERRIDES, name);
      }
      return null;
    }
    Limit limit;
    try {
      limit = EnvoyConfig.limitOf(algorithm, perUnit, perUnit, unit, name, ticksPerSecond);
    } catch (IllegalArgumentException e) {
      return null;
    }
    return s.overrides().computeIfAbsent(name, k -> limiterFor.apply("envoy:" + k, limit));
  }

  private RateLimitResponse finish(RateLimitRequest request, Item[] items) {
    RateLimitResponse.Builder out = RateLimitResponse.newBuilder();
    long nowSeconds = Math.floorDiv(settings.wallMillis().getAsLong(), 1000);
    int failed = 0;
    int quotaTotal = 0;
    int quotaFailed = 0;
    Decision headline = null;
    boolean headlineOver = false;
    DescriptorStatus closest = null;
    long closestRemaining = 0xFFFF_FFFFL;
    boolean known = state.config().domains().containsKey(request.getDomain());
    for (Item item : items) {
      DescriptorStatus.Builder status = DescriptorStatus.newBuilder().setCode(Code.OK);
      String outcome = "no_limit";
      boolean over = false;
      if (item.unlimited) {
        status.setLimitRemaining(UNLIMITED_REMAINING);
      } else if (item.policy != null || item.limit != null) {
        Decision d = item.decision.join();
        long perUnit;
        EnvoyConfig.Unit unit;
        String name;
        if (item.policy != null) {
          Object[] rate = EnvoyConfig.envoyRate(item.resolved.limits().get(0));
          perUnit = (Long) rate[0];
          unit = (EnvoyConfig.Unit) rate[1];
          name = item.policy;
        } else {
          perUnit = item.limit.requestsPerUnit();
          unit = item.limit.unit();
          name = item.limit.name() == null ? "" : item.limit.name();
        }
        long remaining;
        Duration reset;
        if (d == null) {                        // 0 per unit: always over
          over = true;
          remaining = 0;
          reset = calendarReset(unit, nowSeconds);
        } else if (item.windowed) {             // ratelimit's counter, holding perUnit + 1
          long left = Math.round(d.remaining()) - 1;
          over = left < 0;
          remaining = Math.max(0, left);
          reset = calendarReset(unit, nowSeconds);
        } else {
          over = !item.zeroHits && !d.isAllowed();
          remaining = over ? 0 : (long) Math.floor(d.remaining());
          reset = duration(d.resetAfterNanos());
          if (headline == null || (over && !headlineOver)
              || (over == headlineOver && (over ? d.retryAfterNanos() > headline.retryAfterNanos()
                  : d.remaining() < headline.remaining()))) {
            headline = d;
            headlineOver = over;
          }
        }
        status.setCurrentLimit(RateLimitResponse.RateLimit.newBuilder().setName(name)
            .setRequestsPerUnit((int) perUnit)
            .setUnit(RateLimitResponse.RateLimit.Unit.valueOf(unit.name())))
            .setLimitRemaining((int) Math.min(0xFFFF_FFFFL, remaining))
            .setDurationUntilReset(reset);
        boolean shadow = item.shadow && over;
        if (over && !shadow) {
          status.setCode(Code.OVER_LIMIT);
          if (item.quota || settings.quotaMode()) {
            quotaFailed++;
          } else {
            failed++;
          }
        }
        outcome = !over ? "ok" : shadow ? "shadow_over_limit" : "over_limit";
      }
      if (!item.unlimited && (settings.quotaMode() || (item.quota && item.limit != null))) {
        quotaTotal++;
      }
      if (metrics != null) {
        metrics.envoy(known ? request.getDomain() : "unknown", outcome,
            item.node != null && (item.node.detailed || item.node.valueToMetric)
                ? item.node.path : null);
      }
      DescriptorStatus built = status.build();
      if (built.hasCurrentLimit()) {
        long left = Integer.toUnsignedLong(built.getLimitRemaining());
        if (left < closestRemaining) {
          closest = built;
          closestRemaining = left;
        }
        if (built.getCode() == Code.OVER_LIMIT && !item.quota && !settings.quotaMode()) {
          closest = built;
          closestRemaining = 0;
        }
      }
      out.addStatuses(built);
    }
    Code overall = failed > 0 || (quotaTotal > 0 && quotaTotal == quotaFailed) ? Code.OVER_LIMIT
        : Code.OK;
    if (settings.shadowMode()) {
      overall = Code.OK;
    }
    out.setOverallCode(overall);
    if (settings.responseMetadata()) {
      out.setDynamicMetadata(dynamicMetadata(request, items, out));
    }
    if (settings.headers() == Headers.RATELIMIT && closest != null) {
      RateLimitResponse.RateLimit l = closest.getCurrentLimit();
      EnvoyConfig.Unit unit = EnvoyConfig.Unit.valueOf(l.getUnit().name());
      header(out, "RateLimit-Limit", Integer.toUnsignedString(l.getRequestsPerUnit()));
      header(out, "RateLimit-Remaining", Integer.toUnsignedString(closest.getLimitRemaining()));
      header(out, "RateLimit-Reset", Long.toString(calendarReset(unit, nowSeconds).getSeconds()));
    } else if (settings.headers() == Headers.IETF && headline != null
        && !(headlineOver && overall == Code.OK)) {
      for (Map.Entry<String, String> h
          : RateLimitHeaders.of(headline, RateLimitHeaders.Mode.IETF).entrySet()) {
        header(out, h.getKey(), h.getValue());
      }
    }
    return out.build();
  }

  /**
   * envoyproxy/ratelimit's {@code RESPONSE_DYNAMIC_METADATA}: the domain, each descriptor (its
   * entries as {@code key=value}, its limit override and hits_addend when set), the request's
   * hits_addend when set, and the {@code metadata} of the configuration's descriptors that
   * passed, merged (the first value of a key wins; mappings merge).
   */
  // ReferenceEquality: the node's own limit object decided this item, not an equal one
  @SuppressWarnings("ReferenceEquality")
  private static Struct dynamicMetadata(RateLimitRequest request,
      Item[] items, RateLimitResponse.Builder out) {
    Struct.Builder fields = Struct.newBuilder();
    fields.putFields("domain", string(request.getDomain()));
    ListValue.Builder descriptors = ListValue.newBuilder();
    for (RateLimitDescriptor d : request.getDescriptorsList()) {
      Struct.Builder one = Struct.newBuilder();
      ListValue.Builder entries = ListValue.newBuilder();
      for (RateLimitDescriptor.Entry e : d.getEntriesList()) {
        entries.addValues(string(e.getKey() + "=" + e.getValue()));
      }
      one.putFields("entries", Value.newBuilder().setListValue(entries)
          .build());
      if (d.hasLimit()) {
        one.putFields("limit", string(TextFormat.shortDebugString(
            d.getLimit())));
      }
      if (d.hasHitsAddend()) {
        one.putFields("hitsAddend", Value.newBuilder()
            .setNumberValue(d.getHitsAddend().getValue()).build());
      }
      descriptors.addValues(Value.newBuilder().setStructValue(one));
    }
    fields.putFields("descriptors", Value.newBuilder()
        .setListValue(descriptors).build());
    if (request.getHitsAddend() != 0) {
      fields.putFields("hitsAddend", Value.newBuilder()
          .setNumberValue(Integer.toUnsignedLong(request.getHitsAddend())).build());
    }
    Struct.Builder passed = Struct.newBuilder();
    for (int i = 0; i < items.length; i++) {
      Item item = items[i];
      if (!item.unlimited && out.getStatuses(i).getCode() != Code.OVER_LIMIT
          && item.limit != null && item.node != null && item.limit == item.node.rateLimit
          && item.node.metadata != null) {
        merge(passed, item.node.metadata);
      }
    }
    if (passed.getFieldsCount() > 0) {
      fields.putFields("metadata", Value.newBuilder()
          .setStructValue(passed).build());
    }
    return fields.build();
  }

  private static void merge(Struct.Builder into,
      Struct from) {
    for (Map.Entry<String, Value> e : from.getFieldsMap().entrySet()) {
      Value there = into.getFieldsMap().get(e.getKey());
      if (there == null) {
        into.putFields(e.getKey(), e.getValue());
      } else if (there.hasStructValue() && e.getValue().hasStructValue()) {
        Struct.Builder nested = there.getStructValue().toBuilder();
        merge(nested, e.getValue().getStructValue());
        into.putFields(e.getKey(), Value.newBuilder()
            .setStructValue(nested).build());
      }
    }
  }

  private static Value string(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  private static void header(RateLimitResponse.Builder out, String key, String value) {
    out.addResponseHeadersToAdd(HeaderValue.newBuilder().setKey(key).setValue(value));
  }

  /** ratelimit's {@code CalculateReset}: seconds to the end of the calendar unit. */
  static Duration calendarReset(EnvoyConfig.Unit unit, long nowSeconds) {
    return Duration.newBuilder().setSeconds(unit.seconds - Math.floorMod(nowSeconds, unit.seconds))
        .build();
  }

  private static Duration duration(long nanos) {
    return Duration.newBuilder().setSeconds(nanos / 1_000_000_000L)
        .setNanos((int) (nanos % 1_000_000_000L)).build();
  }

  /** At most one log line a minute for one kind of event. */
  static final class LogLimit {
    private final AtomicLong next =
        new AtomicLong(Long.MIN_VALUE);

    boolean allow() {
      long now = System.nanoTime();
      long at = next.get();
      return (at == Long.MIN_VALUE || now - at >= 0)
          && next.compareAndSet(at, now + 60_000_000_000L);
    }
  }
}

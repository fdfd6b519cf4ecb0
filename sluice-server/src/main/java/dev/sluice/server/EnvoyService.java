package dev.sluice.server;

import com.google.protobuf.Duration;
import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.http.RateLimitHeaders;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Envoy's {@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit}, answered from an
 * {@link EnvoyConfig}: each descriptor of a request is matched in its domain's tree and decided by
 * that node's limiter, on its own, as envoyproxy/ratelimit does (a request with several
 * descriptors charges each that admits; the overall code is OVER_LIMIT if any is over its limit).
 *
 * <ul>
 *   <li>{@code hits_addend}: the descriptor's if set, else the request's; 0 means 1.
 *   <li>A descriptor no limit matches, or an {@code unlimited} one: OK, without a current limit.
 *   <li>{@code shadow_mode}: decided and counted as usual, answered OK.
 *   <li>{@code requests_per_unit: 0}: always over the limit.
 *   <li>A per-descriptor {@code limit} override applies only where the node allows it
 *       ({@code sluice: {overrides: true}}).
 *   <li>The response's headers ({@code response_headers_to_add}) are those of the HTTP API:
 *       {@code RateLimit-Policy}, {@code RateLimit}, and {@code Retry-After} when over the limit,
 *       from the descriptor over its limit with the longest wait, else the one with the least
 *       left.
 *   <li>An empty domain or no descriptors, or a descriptor without entries: INVALID_ARGUMENT.
 * </ul>
 */
final class EnvoyService extends RateLimitServiceGrpc.RateLimitServiceImplBase {
  /** Joins a descriptor's entries into one limiter key. */
  static final char SEPARATOR = '\u001f';

  /** The most distinct limit overrides one configuration keeps limiters for. */
  static final int MAX_OVERRIDES = 1_000;

  /**
   * The configuration, one limiter per limited node, and the limiters of the overrides requests
   * asked for (by node path, requests per unit and unit).
   */
  record State(EnvoyConfig config, Map<EnvoyConfig.Node, RateLimiter> limiters,
      java.util.concurrent.ConcurrentHashMap<String, RateLimiter> overrides) {}

  /** The limit a descriptor is held to: a node's, or an override of it. */
  private record Applied(String name, long perUnit, EnvoyConfig.Unit unit, RateLimiter limiter) {}

  private volatile State state;
  private final java.util.function.BiFunction<String, dev.sluice.Limit, RateLimiter> limiterFor;
  private final Metrics metrics;
  private final long ticksPerSecond;
  /** The policies of Sluice's policies file, by name, for descriptors that name one. */
  private final java.util.function.Function<String, PolicyRegistry.Policy> policies;

  /**
   * {@code limiterFor} makes the limiter of a limit, its keys under the given name (the store and
   * failure policy are the caller's).
   */
  EnvoyService(EnvoyConfig config,
      java.util.function.BiFunction<String, dev.sluice.Limit, RateLimiter> limiterFor,
      Metrics metrics, long ticksPerSecond,
      java.util.function.Function<String, PolicyRegistry.Policy> policies) {
    this.policies = policies;
    this.limiterFor = limiterFor;
    this.metrics = metrics;
    this.ticksPerSecond = ticksPerSecond;
    this.state = build(config, null);
  }

  /**
   * The limiters of {@code config}: a limited node whose path and limit are those of a node of
   * {@code before} keeps that node's limiter, and so its keys' state.
   */
  private State build(EnvoyConfig config, State before) {
    Map<String, Map.Entry<EnvoyConfig.Node, RateLimiter>> old = new java.util.HashMap<>();
    if (before != null) {
      for (Map.Entry<EnvoyConfig.Node, RateLimiter> e : before.limiters().entrySet()) {
        old.put(e.getKey().path, e);
      }
    }
    Map<EnvoyConfig.Node, RateLimiter> limiters = new IdentityHashMap<>();
    for (EnvoyConfig.Node n : config.limited()) {
      Map.Entry<EnvoyConfig.Node, RateLimiter> kept = old.get(n.path);
      limiters.put(n, kept != null && kept.getKey().limit.equals(n.limit) ? kept.getValue()
          : limiterFor.apply("envoy:" + n.path, n.limit));
    }
    return new State(config, limiters, new java.util.concurrent.ConcurrentHashMap<>());
  }

  /**
   * Applies a new configuration to the next request; limiters of unchanged limits are kept, the
   * others closed.
   */
  void reload(EnvoyConfig next) {
    State before = state;
    State after = build(next, before);
    state = after;
    java.util.Set<RateLimiter> kept = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
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

  /**
   * Answers without holding the calling thread (a Netty event loop): each limited descriptor is
   * decided with {@code tryAcquireAsync}, which in memory completes at once and on a shared store
   * completes on the store's own threads; the answer is sent when every one has completed.
   */
  @Override
  public void shouldRateLimit(RateLimitRequest request,
      StreamObserver<RateLimitResponse> responses) {
    Pending pending;
    try {
      pending = start(request);
    } catch (IllegalArgumentException e) {
      responses.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    java.util.concurrent.CompletableFuture.allOf(pending.decisions)
        .whenComplete((ignored, failure) -> {
          if (failure != null) {
            responses.onError(Status.INTERNAL.withDescription(String.valueOf(failure))
                .asRuntimeException());
            return;
          }
          responses.onNext(finish(request, pending));
          responses.onCompleted();
        });
  }

  /** The descriptors of a request, matched, with their decisions under way. */
  private record Pending(State state, EnvoyConfig.Node[] nodes, Applied[] applied,
      java.util.concurrent.CompletableFuture<?>[] decisions) {}

  private Pending start(RateLimitRequest request) {
    if (request.getDomain().isEmpty()) {
      throw new IllegalArgumentException("the rate limit domain must not be empty");
    }
    if (request.getDescriptorsCount() == 0) {
      throw new IllegalArgumentException("a rate limit request needs at least one descriptor");
    }
    State s = state;
    int n = request.getDescriptorsCount();
    EnvoyConfig.Node[] nodes = new EnvoyConfig.Node[n];
    Applied[] applied = new Applied[n];
    java.util.concurrent.CompletableFuture<?>[] decisions =
        new java.util.concurrent.CompletableFuture<?>[n];
    String[] keys = new String[n];
    long[] hitsOf = new long[n];
    // First every descriptor is checked and matched; only then is any charged, so a request
    // refused as malformed charges nothing.
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor descriptor = request.getDescriptors(i);
      if (descriptor.getEntriesCount() == 0) {
        throw new IllegalArgumentException("descriptor " + i + " has no entries");
      }
      List<String[]> entries = new ArrayList<>(descriptor.getEntriesCount());
      StringBuilder key = new StringBuilder(request.getDomain());
      for (RateLimitDescriptor.Entry e : descriptor.getEntriesList()) {
        entries.add(new String[] {e.getKey(), e.getValue()});
        key.append(SEPARATOR).append(e.getKey()).append('=').append(e.getValue());
      }
      long hits = descriptor.hasHitsAddend() ? descriptor.getHitsAddend().getValue()
          : Integer.toUnsignedLong(request.getHitsAddend());
      if (hits == 0) {
        hits = 1;
      }
      String problem = dev.sluice.spi.StoreKeys.problem(key.toString());
      if (problem != null) {
        throw new IllegalArgumentException("descriptor " + i + ": its domain and entries as a"
            + " key " + problem);
      }
      keys[i] = key.toString();
      hitsOf[i] = hits;
      EnvoyConfig.Node node = s.config().match(request.getDomain(), entries);
      nodes[i] = node;
      Applied a;
      if (node != null && !node.unlimited && node.policy != null) {
        PolicyRegistry.Policy policy = policies.apply(node.policy);
        if (policy == null) {
          throw new IllegalStateException("policy " + node.policy + " is gone");
        }
        Object[] rate = EnvoyConfig.envoyRate(policy.limits().get(0));
        a = new Applied(policy.name(), (Long) rate[0], (EnvoyConfig.Unit) rate[1],
            policy.limiter());
      } else {
        a = node == null || node.unlimited || node.unit == null ? null
            : new Applied(node.limit != null ? node.limit.name() : node.path, node.requestsPerUnit,
                node.unit, node.limit != null ? s.limiters().get(node) : null);
      }
      if (a != null && descriptor.hasLimit() && node.overrides) {
        a = override(s, node, descriptor.getLimit(), i);
      }
      applied[i] = a;
    }
    for (int i = 0; i < n; i++) {
      Applied a = applied[i];
      decisions[i] = a != null && a.limiter() != null
          ? a.limiter().tryAcquireAsync(keys[i], hitsOf[i])
          : java.util.concurrent.CompletableFuture.completedFuture(null);
    }
    return new Pending(s, nodes, applied, decisions);
  }

  /**
   * A request's {@code limit} override of a node that allows them ({@code sluice: {overrides:
   * true}}): a limiter of its own per distinct override, at most {@link #MAX_OVERRIDES} per
   * configuration, with the node's algorithm and one unit's worth of capacity.
   */
  private Applied override(State s, EnvoyConfig.Node node,
      RateLimitDescriptor.RateLimitOverride o, int i) {
    EnvoyConfig.Unit unit;
    try {
      unit = EnvoyConfig.Unit.valueOf(o.getUnit().name());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("descriptor " + i + ": the limit override's unit must"
          + " be second, minute, hour, day, week, month or year but was " + o.getUnit());
    }
    long perUnit = Integer.toUnsignedLong(o.getRequestsPerUnit());
    String name = node.path + "/override/" + perUnit + "-per-" + unit.name().toLowerCase(
        java.util.Locale.ROOT);
    if (perUnit == 0) {
      return new Applied(name, 0, unit, null);
    }
    RateLimiter limiter = s.overrides().get(name);
    if (limiter == null) {
      if (s.overrides().size() >= MAX_OVERRIDES) {
        throw new IllegalArgumentException("descriptor " + i + ": more than " + MAX_OVERRIDES
            + " distinct limit overrides; the configuration's limits still apply");
      }
      dev.sluice.Limit limit;
      try {
        limit = EnvoyConfig.limitOf(node.algorithm, perUnit, perUnit, unit, name, ticksPerSecond);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("descriptor " + i + ": limit override: "
            + e.getMessage());
      }
      limiter = s.overrides().computeIfAbsent(name, k -> limiterFor.apply("envoy:" + k, limit));
    }
    return new Applied(name, perUnit, unit, limiter);
  }

  private RateLimitResponse finish(RateLimitRequest request, Pending p) {
    RateLimitResponse.Builder out = RateLimitResponse.newBuilder();
    Code overall = Code.OK;
    Decision headline = null;
    boolean headlineOver = false;
    for (int i = 0; i < p.nodes.length; i++) {
      EnvoyConfig.Node node = p.nodes[i];
      Applied a = p.applied[i];
      DescriptorStatus.Builder status = DescriptorStatus.newBuilder().setCode(Code.OK);
      String outcome = "no_limit";
      if (a != null) {
        status.setCurrentLimit(RateLimitResponse.RateLimit.newBuilder()
            .setName(a.name())
            .setRequestsPerUnit((int) Math.min(Integer.MAX_VALUE, a.perUnit()))
            .setUnit(RateLimitResponse.RateLimit.Unit.valueOf(a.unit().name())));
        boolean over;
        if (a.limiter() == null) {   // requests_per_unit: 0
          over = true;
        } else {
          Decision d = (Decision) p.decisions[i].join();
          over = !d.isAllowed();
          status.setLimitRemaining((int) Math.min(Integer.MAX_VALUE, Math.floor(d.remaining())));
          status.setDurationUntilReset(duration(d.resetAfterNanos()));
          if (headline == null || (over && !headlineOver)
              || (over == headlineOver && (over ? d.retryAfterNanos() > headline.retryAfterNanos()
                  : d.remaining() < headline.remaining()))) {
            headline = d;
            headlineOver = over;
          }
        }
        if (over && !node.shadow) {
          status.setCode(Code.OVER_LIMIT);
          overall = Code.OVER_LIMIT;
        }
        outcome = !over ? "ok" : node.shadow ? "shadow_over_limit" : "over_limit";
      }
      if (metrics != null) {
        boolean known = p.state.config().domains().containsKey(request.getDomain());
        metrics.envoy(known ? request.getDomain() : "unknown", outcome,
            node != null && node.detailed ? node.path : null);
      }
      out.addStatuses(status);
    }
    out.setOverallCode(overall);
    if (headline != null && !(headlineOver && overall == Code.OK)) {
      for (Map.Entry<String, String> h
          : RateLimitHeaders.of(headline, RateLimitHeaders.Mode.IETF).entrySet()) {
        out.addResponseHeadersToAdd(HeaderValue.newBuilder().setKey(h.getKey())
            .setValue(h.getValue()));
      }
    }
    return out.build();
  }

  private static Duration duration(long nanos) {
    return Duration.newBuilder().setSeconds(nanos / 1_000_000_000L)
        .setNanos((int) (nanos % 1_000_000_000L)).build();
  }
}

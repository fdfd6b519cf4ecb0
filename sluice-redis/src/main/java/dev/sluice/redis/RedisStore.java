package dev.sluice.redis;

import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreProtocol.PermitOperation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.LongSupplier;

/**
 * Limits shared through Redis: each decision is one Lua script call ({@code EVALSHA}, resent as
 * {@code EVAL} on {@code NOSCRIPT}, never replayed after a timeout), computed on Redis
 * {@code TIME} in microseconds. A key's state is one Redis string under
 * {@code prefix + "{" + key + "}"}, written only when it changes and expiring when the key is idle.
 * The limits travel with each call, so changing them needs no migration (state of another layout
 * of limits is not reused).
 *
 * <pre>{@code
 * RedisStore store = RedisStore.builder("redis://localhost:6379").build();
 * RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1))).store(store).build();
 * }</pre>
 *
 * Thread-safe; one multiplexed connection serves every thread.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#redis-sluice-redis">docs/operations.md, "Redis (sluice-redis)"</a>.
 */
public final class RedisStore implements DecisionStore, PermitStore {
  static final String SCRIPT = load("decide.lua");
  /** The script's SHA-1, as Redis names it (computed here, so no node needs to be asked). */
  static final String SHA = sha1(SCRIPT);
  /** The permits' script (a {@link dev.sluice.concurrency.ConcurrencyLimiter} on Redis). */
  static final String PERMITS_SCRIPT = load("permits.lua");
  static final String PERMITS_SHA = sha1(PERMITS_SCRIPT);
  /**
   * With injected time, Redis still expires keys on its own clock: keys then live this much
   * longer than their idle instant, so that a test's virtual time may run slower than real time.
   */
  private static final String INJECTED_TIME_EXPIRY_PADDING_MS = "60000";

  private final String name;
  private final RedisConnection redis;

  /**
   * The longest Lettuce waits between reconnect attempts on a client the store makes: the delay
   * doubles from 1 ms up to this. Lettuce's default grows to 30 s, so a Redis back after a long
   * outage waited up to that long for its first decision.
   */
  static final Duration RECONNECT_DELAY_CAP = Duration.ofMillis(250);
  private final String prefix;
  private final LongSupplier micros;

  private RedisStore(Builder b) {
    this.name = redacted(b.uri);
    this.prefix = b.prefix;
    this.micros = b.micros;
    this.redis = b.connection != null ? RedisConnection.of(b.connection)
        : b.clusterConnection != null ? RedisConnection.of(b.clusterConnection)
        : b.clusterSeeds != null ? RedisConnection.connectCluster(b.clusterSeeds, b.topologyRefresh,
            b.connectTimeout, b.commandTimeout, b.reconnectDelayCap, name, b.startupTimeout)
        : RedisConnection.connect(b.client, b.uri, b.uriTimeoutGiven, b.connectTimeout,
            b.commandTimeout, b.reconnectDelayCap, b.startupTimeout);
  }

  /** A builder for a store on the server at {@code uri} (redis://, rediss://, redis-sentinel://). */
  public static Builder builder(String uri) {
    Objects.requireNonNull(uri, "uri");
    try {
      return new Builder(RedisURI.create(uri), null);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a Redis URI: '" + uri + "': " + e.getMessage(), e);
    }
  }

  /**
   * A builder for a store on the server at {@code uri} (standalone, or Sentinel with its master
   * id), on a client of the store's own (as {@link #builder(String)}).
   */
  public static Builder builder(RedisURI uri) {
    Builder b = new Builder(Objects.requireNonNull(uri, "uri"), null);   // not changed here
    b.uriTimeoutGiven = true;
    return b;
  }

  /**
   * A builder that connects with the caller's client (which the store does not shut down). Its
   * {@code ClientResources} decide how long it waits between reconnect attempts: Lettuce's default
   * grows to 30 s during an outage, so set a {@code reconnectDelay} with a cap (the store's own
   * clients use {@code Delay.exponential(1 ms, 250 ms, 2, MILLISECONDS)}) if decisions should come
   * back soon after a long outage.
   */
  public static Builder builder(RedisClient client, RedisURI uri) {
    return new Builder(Objects.requireNonNull(uri, "uri"), Objects.requireNonNull(client, "client"));
  }

  /**
   * A builder for a store on a Redis Cluster, from one or more seed nodes (redis://host:port).
   * Every key of one call shares a hash tag, so no call is ever {@code CROSSSLOT}.
   */
  public static Builder clusterBuilder(String... seedUris) {
    if (seedUris.length == 0) {
      throw new IllegalArgumentException("a Redis Cluster needs at least one seed URI");
    }
    List<RedisURI> seeds = new ArrayList<>();
    for (String u : seedUris) {
      try {
        seeds.add(RedisURI.create(Objects.requireNonNull(u, "seed URI")));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("not a Redis URI: '" + u + "': " + e.getMessage(), e);
      }
    }
    Builder b = new Builder(seeds.get(0), null);
    b.clusterSeeds = seeds;
    return b;
  }

  /** A builder that uses the caller's cluster connection, as configured, and does not close it. */
  public static Builder builder(StatefulRedisClusterConnection<String, String> connection) {
    Objects.requireNonNull(connection, "connection");
    Builder b = new Builder(RedisURI.create("redis://cluster-connection"), null);
    b.clusterConnection = connection;
    return b;
  }

  /**
   * A builder that uses the caller's connection, as it is configured (timeouts included), and
   * does not close it.
   */
  public static Builder builder(StatefulRedisConnection<String, String> connection) {
    Objects.requireNonNull(connection, "connection");
    Builder b = new Builder(RedisURI.create("redis://connection"), null);
    b.connection = connection;
    return b;
  }

  @Override
  public long ticksPerSecond() {
    return 1_000_000L;
  }

  @Override
  public Observation apply(String key, StoreRequest request) {
    return eval(new String[] {stateKey(key)}, args(request));
  }

  /**
   * A group's decision: one script call on the key's state and the group's parent, both under
   * the group's hash tag (one slot: in a cluster, a group lives on one node).
   */
  @Override
  public Observation applyGroup(String group, String key, StoreRequest request) {
    return eval(groupKeys(group, key, request), args(request));
  }

  @Override
  public CompletableFuture<Observation> applyGroupAsync(String group, String key,
      StoreRequest request) {
    return evalAsync(groupKeys(group, key, request), args(request));
  }

  @Override
  public boolean supportsGroups() {
    return true;
  }

  @Override
  public void resetGroupMember(String group, String key) {
    redis.keyCommands.del(memberKey(group, key));
  }

  @Override
  public Object groupFailureDomain(String group) {
    if (redis.cluster == null) {
      return null;
    }
    RedisClusterNode owner =
        redis.cluster.getPartitions().getPartitionBySlot(SlotHash.getSlot(parentKey(group)));
    return owner == null ? null : owner.getNodeId();
  }

  private String[] groupKeys(String group, String key, StoreRequest request) {
    if (!request.isGroup()) {
      throw new IllegalArgumentException("applyGroup needs a group's request");
    }
    return new String[] {memberKey(group, key), parentKey(group)};
  }

  private Observation eval(String[] keys, String[] args) {
    List<Object> reply;
    try {
      try {
        reply = redis.commands.evalsha(redis.sha, ScriptOutputType.MULTI, keys, args);
      } catch (RedisNoScriptException e) {
        // The server lost its script cache (restart, failover, SCRIPT FLUSH): the script did not
        // run, so sending it whole is safe. A timeout is never retried: the script may have run.
        reply = redis.commands.eval(SCRIPT, ScriptOutputType.MULTI, keys, args);
      }
    } catch (RuntimeException e) {
      throw classified(e);
    }
    return observation(reply);
  }

  /**
   * A failure that says the server could not be reached at all (refused, lost or no connection;
   * a cluster or server not serving yet) as a {@link StoreUnavailableException}, on which the
   * circuit breaker opens at once; a timeout or anything else as it is.
   */
  static RuntimeException classified(Throwable failure) {
    Throwable e = failure instanceof CompletionException
        && failure.getCause() != null ? failure.getCause() : failure;
    if (e instanceof StoreUnavailableException u) {
      return u;
    }
    if (e instanceof RedisCommandTimeoutException t) {
      return t;
    }
    if (unreachable(e)) {
      return new StoreUnavailableException("Redis could not be reached: " + rootMessage(e), e);
    }
    return e instanceof RuntimeException r ? r : new RedisException(e);
  }

  private static boolean unreachable(Throwable e) {
    if (e instanceof RedisConnectionException || e instanceof IOException) {
      return true;
    }
    String m = e.getMessage();
    if (m != null && (m.startsWith("Currently not connected") || m.startsWith("Connection closed")
        || m.startsWith("Connection disconnected") || m.startsWith("CLUSTERDOWN")
        || m.startsWith("LOADING") || m.startsWith("MASTERDOWN")
        || m.startsWith("Cannot determine a partition") || m.startsWith("Unable to connect"))) {
      return true;
    }
    return e.getCause() != null && e.getCause() != e && unreachable(e.getCause());
  }

  /** In a cluster, the node that owns the key's slot now (it changes on failover). */
  @Override
  public Object failureDomain(String key) {
    if (redis.cluster == null) {
      return null;
    }
    RedisClusterNode owner = redis.cluster.getPartitions().getPartitionBySlot(SlotHash.getSlot(stateKey(key)));
    return owner == null ? null : owner.getNodeId();
  }

  /** {@code PING} within the command timeout (a cluster: on the node Lettuce uses by default). */
  @Override
  public void ping() {
    try {
      redis.pingCommands.ping();
    } catch (RuntimeException e) {
      throw classified(e);
    }
  }

  @Override
  public CompletableFuture<Observation> applyAsync(String key, StoreRequest request) {
    return evalAsync(new String[] {stateKey(key)}, args(request));
  }

  // FutureReturnValueIgnored: the nested stage is composed (thenCompose(f -> f)) before it is returned
  @SuppressWarnings("FutureReturnValueIgnored")
  private CompletableFuture<Observation> evalAsync(String[] keys, String[] args) {
    CompletableFuture<List<Object>> first =
        redis.asyncCommands.<List<Object>>evalsha(redis.sha, ScriptOutputType.MULTI, keys, args).toCompletableFuture();
    return first.handle((reply, failure) -> {
      if (failure == null) {
        return CompletableFuture.completedFuture(reply);
      }
      Throwable cause = failure instanceof CompletionException
          && failure.getCause() != null ? failure.getCause() : failure;
      if (cause instanceof RedisNoScriptException) {
        return redis.asyncCommands.<List<Object>>eval(SCRIPT, ScriptOutputType.MULTI, keys, args)
            .toCompletableFuture();
      }
      return CompletableFuture.<List<Object>>failedFuture(cause);
    }).thenCompose(f -> f).handle((reply, failure) -> {
      if (failure != null) {
        throw classified(failure);
      }
      return observation(reply);
    });
  }

  private static Observation observation(List<Object> reply) {
    long now = (Long) reply.get(0);
    long[] state = new long[reply.size() - 1];
    for (int i = 0; i < state.length; i++) {
      state[i] = (Long) reply.get(i + 1);
    }
    return new Observation(now, state);
  }

  /** The script's arguments for {@code request} (tests replay them through other scripts). */
  String[] args(StoreRequest request) {
    int n = request.limits();
    int per = StoreProtocol.ARGS_PER_LIMIT;
    int after = StoreProtocol.ARGV_HEADER + per * n;
    String[] args = new String[after + (request.isGroup()
        ? StoreProtocol.AFTER_LIMITS_RESERVE + 1 : StoreProtocol.AFTER_LIMITS_COUNT + 1)];
    args[StoreProtocol.ARGV_OP] = Integer.toString(request.operation().code());
    args[StoreProtocol.ARGV_NOW] = Long.toString(micros == null ? -1 : micros.getAsLong());
    args[StoreProtocol.ARGV_LAYOUT] = request.layout();
    args[StoreProtocol.ARGV_EXPIRY_PADDING] = micros == null ? "0" : INJECTED_TIME_EXPIRY_PADDING_MS;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < per; j++) {
        args[StoreProtocol.ARGV_HEADER + per * i + j] = Long.toString(request.argument(i, j));
      }
    }
    args[after + StoreProtocol.AFTER_LIMITS_COUNT] = Long.toString(request.count());
    if (request.isGroup()) {
      args[after + StoreProtocol.AFTER_LIMITS_RESERVE] = Long.toString(request.reserve());
    }
    return args;
  }

  @Override
  public void reset(String key) {
    redis.keyCommands.del(stateKey(key));
  }

  /**
   * Fleet mode's count of live instances: a sorted set per fleet of instance → expiry (ms, Redis
   * time), trimmed of the expired, itself expiring with the last instance.
   */
  static final String INSTANCES_SCRIPT = String.join("\n",
      "local now = tonumber(ARGV[3])",
      "if now < 0 then",
      "  local t = redis.call('TIME')",
      "  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
      "end",
      "local ttl = tonumber(ARGV[2])",
      "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)",
      "redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])",
      "redis.call('PEXPIRE', KEYS[1], ttl)",
      "return redis.call('ZCARD', KEYS[1])");

  @Override
  public CompletableFuture<Integer> liveInstances(String fleet, String instance, long ttlMillis) {
    String[] keys = {instancesKey(fleet)};
    String[] args = {instance, Long.toString(ttlMillis),
        Long.toString(micros == null ? -1 : Math.floorDiv(micros.getAsLong(), 1000))};
    try {
      return redis.asyncCommands.<Long>eval(INSTANCES_SCRIPT, ScriptOutputType.INTEGER, keys, args)
          .toCompletableFuture().handle((n, failure) -> {
            if (failure != null) {
              throw classified(failure);
            }
            return n.intValue();
          });
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(classified(e));
    }
  }

  /**
   * The Redis key counting a fleet's live instances: never a limited key's (those end with the
   * closing brace of their hash tag).
   */
  String instancesKey(String fleet) {
    return prefix + "{" + fleet + "}:instances";
  }

  /**
   * The Redis key of a group's parent, {@code prefix{=group}\0}: its hash tag is the group's
   * (prefixed so that it is never empty), and it holds U+0000, which no limited key or group
   * contains, so it is never another key's.
   */
  String parentKey(String group) {
    return prefix + "{=" + group + "}\u0000";
  }

  /** The Redis key of a key's state in a group: the parent's followed by the key. */
  String memberKey(String group, String key) {
    return parentKey(group) + key;
  }

  /** The Redis key holding a limited key's state. */
  String stateKey(String key) {
    return prefix + "{" + key + "}";
  }

  // ------------------------------------------------------------------------------ permits

  private static final int PERMIT_ACQUIRE = PermitOperation.ACQUIRE.code();
  private static final int PERMIT_RENEW = PermitOperation.RENEW.code();
  private static final int PERMIT_RELEASE = PermitOperation.RELEASE.code();
  private static final int PERMIT_COUNT = PermitOperation.COUNT.code();
  private static final int PERMIT_CANCEL = PermitOperation.CANCEL.code();

  /**
   * Takes a permit in the key's sorted set ({@code prefix{key}:permits}, the key's hash tag):
   * one script call on Redis {@code TIME}; see {@link PermitStore}.
   */
  @Override
  public PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return permits(key, PERMIT_ACQUIRE, permitId, weight, ceiling, leaseMillis);
  }

  @Override
  public CompletableFuture<PermitReply> acquireAsync(String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return permitsAsync(keyAndCancelled(key),
        permitArgs(PERMIT_ACQUIRE, permitId, weight, ceiling, leaseMillis));
  }

  /** {@link #release} on Lettuce's asynchronous API: no thread waits for Redis. */
  @Override
  public CompletableFuture<PermitReply> releaseAsync(String key, String permitId, int weight) {
    return permitsAsync(new String[] {permitsKey(key)},
        permitArgs(PERMIT_RELEASE, permitId, weight, 0, 0));
  }

  // FutureReturnValueIgnored: the nested stage is composed (thenCompose(f -> f)) before it is returned
  @SuppressWarnings("FutureReturnValueIgnored")
  private CompletableFuture<PermitReply> permitsAsync(String[] keys, String[] args) {
    CompletableFuture<List<Long>> first;
    try {
      first = redis.asyncCommands.<List<Long>>evalsha(PERMITS_SHA, ScriptOutputType.MULTI, keys,
          args).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(classified(e));
    }
    return first.handle((reply, failure) -> {
      if (failure == null) {
        return CompletableFuture.completedFuture(reply);
      }
      Throwable cause = failure instanceof CompletionException
          && failure.getCause() != null ? failure.getCause() : failure;
      if (cause instanceof RedisNoScriptException) {
        return redis.asyncCommands.<List<Long>>eval(PERMITS_SCRIPT, ScriptOutputType.MULTI, keys,
            args).toCompletableFuture();
      }
      return CompletableFuture.<List<Long>>failedFuture(cause);
    }).thenCompose(f -> f).handle((reply, failure) -> {
      if (failure != null) {
        throw classified(failure);
      }
      return permitReply(reply);
    });
  }

  @Override
  public PermitReply renew(String key, String permitId, int weight, long leaseMillis) {
    return permits(key, PERMIT_RENEW, permitId, weight, 0, leaseMillis);
  }

  @Override
  public PermitReply release(String key, String permitId, int weight) {
    return permits(key, PERMIT_RELEASE, permitId, weight, 0, 0);
  }

  /**
   * Gives back a permit whose acquire's answer was lost: removes it if held, and remembers the id
   * in the key's cancelled set ({@code prefix{key}:cancelled}) for a lease; see
   * {@link PermitStore#cancel}.
   */
  @Override
  public PermitReply cancel(String key, String permitId, int weight, long leaseMillis) {
    return permits(keyAndCancelled(key), permitArgs(PERMIT_CANCEL, permitId, weight, 0,
        leaseMillis));
  }

  /** {@link #cancel} on Lettuce's asynchronous API, on the connection of the acquire. */
  @Override
  public CompletableFuture<PermitReply> cancelAsync(String key, String permitId, int weight,
      long leaseMillis) {
    return permitsAsync(keyAndCancelled(key), permitArgs(PERMIT_CANCEL, permitId, weight, 0,
        leaseMillis));
  }

  @Override
  public int inFlight(String key) {
    return permits(key, PERMIT_COUNT, "", 1, 0, 0).inFlight();
  }

  @Override
  public void resetPermits(String key) {
    try {
      redis.keyCommands.del(permitsKey(key), cancelledKey(key));
    } catch (RuntimeException e) {
      throw classified(e);
    }
  }

  /** A key's permits share its hash tag, so they live on the node of its rate state. */
  @Override
  public Object permitFailureDomain(String key) {
    return failureDomain(key);
  }

  private PermitReply permits(String key, int op, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return permits(keyAndCancelled(key), permitArgs(op, permitId, weight, ceiling, leaseMillis));
  }

  private String[] keyAndCancelled(String key) {
    return new String[] {permitsKey(key), cancelledKey(key)};
  }

  private PermitReply permits(String[] keys, String[] args) {
    List<Long> reply;
    try {
      try {
        reply = redis.commands.evalsha(PERMITS_SHA, ScriptOutputType.MULTI, keys, args);
      } catch (RedisNoScriptException e) {
        reply = redis.commands.eval(PERMITS_SCRIPT, ScriptOutputType.MULTI, keys, args);
      }
    } catch (RuntimeException e) {
      throw classified(e);
    }
    return permitReply(reply);
  }

  private String[] permitArgs(int op, String permitId, int weight, int ceiling,
      long leaseMillis) {
    return permitArgs(StoreProtocol.PERMIT_ARGV_PLAIN, op, permitId, weight, ceiling,
        leaseMillis);
  }

  /** permits.lua's ARGV, of the given length, with the arguments every call has. */
  private String[] permitArgs(int length, int op, String permitId, int weight, int ceiling,
      long leaseMillis) {
    String[] args = new String[length];
    args[StoreProtocol.PERMIT_ARGV_OP] = Integer.toString(op);
    args[StoreProtocol.PERMIT_ARGV_NOW] =
        Long.toString(micros == null ? -1 : Math.floorDiv(micros.getAsLong(), 1000));
    args[StoreProtocol.PERMIT_ARGV_ID] = permitId;
    args[StoreProtocol.PERMIT_ARGV_WEIGHT] = Integer.toString(weight);
    args[StoreProtocol.PERMIT_ARGV_CEILING] = Integer.toString(ceiling);
    args[StoreProtocol.PERMIT_ARGV_LEASE] = Long.toString(leaseMillis);
    args[StoreProtocol.PERMIT_ARGV_EXPIRY_PADDING] =
        micros == null ? "0" : INJECTED_TIME_EXPIRY_PADDING_MS;
    return args;
  }

  // ------------------------------------------------------------------------------ permit groups

  /**
   * Grouped permits: the key's sorted set and the group's are both under the group's hash tag
   * (one slot: in a cluster, a group lives on one node), and each call is one script call on
   * both.
   */
  @Override
  public boolean supportsPermitGroups() {
    return true;
  }

  @Override
  public PermitReply acquire(PermitGroup group, String key, String permitId, int weight,
      int ceiling, long leaseMillis) {
    return permits(groupKeys(group.name(), key),
        groupArgs(group, key, PERMIT_ACQUIRE, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public CompletableFuture<PermitReply> acquireAsync(PermitGroup group, String key,
      String permitId, int weight, int ceiling, long leaseMillis) {
    return permitsAsync(groupKeys(group.name(), key),
        groupArgs(group, key, PERMIT_ACQUIRE, permitId, weight, ceiling, leaseMillis));
  }

  @Override
  public PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return permits(groupKeys(group, key),
        groupArgs(null, key, PERMIT_RENEW, permitId, weight, 0, leaseMillis));
  }

  @Override
  public PermitReply release(String group, String key, String permitId, int weight) {
    return permits(groupKeys(group, key),
        groupArgs(null, key, PERMIT_RELEASE, permitId, weight, 0, 0));
  }

  @Override
  public CompletableFuture<PermitReply> releaseAsync(String group, String key, String permitId,
      int weight) {
    return permitsAsync(groupKeys(group, key),
        groupArgs(null, key, PERMIT_RELEASE, permitId, weight, 0, 0));
  }

  @Override
  public PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    return permits(groupKeys(group, key),
        groupArgs(null, key, PERMIT_CANCEL, permitId, weight, 0, leaseMillis));
  }

  @Override
  public CompletableFuture<PermitReply> cancelAsync(String group, String key, String permitId,
      int weight, long leaseMillis) {
    return permitsAsync(groupKeys(group, key),
        groupArgs(null, key, PERMIT_CANCEL, permitId, weight, 0, leaseMillis));
  }

  /** The key's weight in its group, or the group's (key null): a count on one set. */
  @Override
  public int inFlight(String group, String key) {
    String set = key == null ? groupPermitsKey(group) : groupMemberPermitsKey(group, key);
    return permits(new String[] {set}, permitArgs(PERMIT_COUNT, "", 1, 0, 0)).inFlight();
  }

  /**
   * Forgets the key's permits in the group (its set; the group's set keeps their members until
   * their leases end), or the whole group's when key is null.
   */
  @Override
  public void resetPermits(String group, String key) {
    try {
      if (key == null) {
        redis.keyCommands.del(groupPermitsKey(group));
      } else {
        redis.keyCommands.del(groupMemberPermitsKey(group, key),
            groupMemberPermitsKey(group, key) + CANCELLED_SUFFIX);
      }
    } catch (RuntimeException e) {
      throw classified(e);
    }
  }

  @Override
  public Object groupPermitFailureDomain(String group) {
    return groupFailureDomain(group);
  }

  private String[] groupKeys(String group, String key) {
    String member = groupMemberPermitsKey(group, key);
    return new String[] {member, member + CANCELLED_SUFFIX, groupPermitsKey(group)};
  }

  /** After a group member's set's name, the name of its cancelled ids' set. */
  private static final String CANCELLED_SUFFIX = "\u0000cancelled";

  private String[] groupArgs(PermitGroup group, String key, int op, String permitId, int weight,
      int ceiling, long leaseMillis) {
    String[] args = permitArgs(StoreProtocol.PERMIT_ARGV_GROUPED, op, permitId, weight, ceiling,
        leaseMillis);
    args[StoreProtocol.PERMIT_ARGV_GROUP_LIMIT] =
        group == null ? "0" : Integer.toString(group.limit());
    args[StoreProtocol.PERMIT_ARGV_GROUP_CEILING] =
        group == null ? "0" : Integer.toString(group.borrowCeiling());
    args[StoreProtocol.PERMIT_ARGV_ASSURED] =
        group == null ? "0" : Integer.toString(group.assured());
    args[StoreProtocol.PERMIT_ARGV_MEMBERS] = key + "\u0000";
    return args;
  }

  /**
   * The Redis key of a group's permits: the group's parent key (its hash tag) followed by
   * U+0000 and {@code permits}; no limited key, group member or group parent is named so, since
   * keys hold no U+0000.
   */
  String groupPermitsKey(String group) {
    return parentKey(group) + "\u0000permits";
  }

  /** The Redis key of a key's permits in a group: the group's, U+0000, the key. */
  String groupMemberPermitsKey(String group, String key) {
    return groupPermitsKey(group) + "\u0000" + key;
  }

  private static PermitReply permitReply(List<Long> reply) {
    return new PermitReply(reply.get(0) == 1L, reply.get(1).intValue(), reply.get(2));
  }

  /**
   * The Redis key of a key's permits: under the key's hash tag, and never a limited key's (those
   * end with the closing brace) nor a fleet's (those end with {@code :instances}).
   */
  String permitsKey(String key) {
    return prefix + "{" + key + "}:permits";
  }

  /** The Redis key of a key's cancelled permit ids: beside its permits, under its hash tag. */
  String cancelledKey(String key) {
    return prefix + "{" + key + "}:cancelled";
  }

  @Override
  public void close() {
    redis.close();
  }

  @Override
  public String toString() {
    return "RedisStore[" + name + "]";
  }

  static String redacted(RedisURI uri) {
    return uri.getHost() + ":" + uri.getPort();
  }

  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
  }

  private static String sha1(String script) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-1")
          .digest(script.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder(40);
      for (byte x : d) {
        hex.append(Character.forDigit((x >> 4) & 15, 16)).append(Character.forDigit(x & 15, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is missing from this JVM", e);
    }
  }

  private static String load(String name) {
    try (InputStream in = RedisStore.class.getResourceAsStream(name)) {
      return new String(Objects.requireNonNull(in, name).readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Settings of a {@link RedisStore}; each fails fast with the value it refuses. */
  public static final class Builder {
    private final RedisURI uri;
    private final RedisClient client;
    /** The caller's URI (builder(RedisURI)): its own timeout stays. */
    private boolean uriTimeoutGiven;
    private String prefix = "sluice:";
    private Duration commandTimeout = Duration.ofMillis(50);
    private Duration reconnectDelayCap = RECONNECT_DELAY_CAP;
    private Duration connectTimeout = Duration.ofSeconds(2);
    private Duration startupTimeout = Duration.ofSeconds(10);
    private LongSupplier micros;
    private StatefulRedisConnection<String, String> connection;
    private StatefulRedisClusterConnection<String, String> clusterConnection;
    private List<RedisURI> clusterSeeds;
    private Duration topologyRefresh = Duration.ofSeconds(10);

    private Builder(RedisURI uri, RedisClient client) {
      this.uri = uri;
      this.client = client;
    }

    /** Prefix of every key Sluice writes (default {@code sluice:}). */
    public Builder prefix(String prefix) {
      Objects.requireNonNull(prefix, "prefix");
      if (prefix.contains("{") || prefix.contains("}")) {
        throw new IllegalArgumentException("prefix must not contain '{' or '}' but was '" + prefix + "'");
      }
      this.prefix = prefix;
      return this;
    }

    /**
     * The longest a client the store makes waits between reconnect attempts while Redis is down
     * (default 250 ms; the delay doubles from 1 ms up to it): Redis answers decisions again at
     * most this long after it is back, whatever the outage's length. Lettuce's own default grows
     * to 30 s. Not used with a client or connection of the application's, whose
     * {@code ClientResources} decide.
     */
    public Builder reconnectDelayCap(Duration cap) {
      this.reconnectDelayCap = positive("reconnectDelayCap", cap);
      return this;
    }

    /** How long one decision may take before it fails (default 50 ms). */
    public Builder commandTimeout(Duration timeout) {
      this.commandTimeout = positive("commandTimeout", timeout);
      return this;
    }

    /**
     * A Redis Cluster's periodic topology refresh (default every 10 s; null: only the adaptive
     * refresh). Adaptive refresh is always on: a MOVED or ASK redirect, a node that keeps
     * failing to reconnect, or a slot without an owner makes the store read the topology again
     * at once, so it follows a failover as soon as the cluster has promoted a replica.
     */
    public Builder topologyRefresh(Duration period) {
      this.topologyRefresh = period == null ? null : positive("topologyRefresh", period);
      return this;
    }

    /**
     * How long connecting may take at build time, handshake included (default 2 s): a server
     * that accepts the connection but never answers fails the build within it.
     */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive("connectTimeout", timeout);
      return this;
    }

    /**
     * How long {@link #build()} may wait for Redis in all (default 10 s): connecting (each attempt
     * within {@link #connectTimeout}) and loading Sluice's script are tried again with backoff
     * (50 ms doubling to 1 s) until then, each failed attempt logged at INFO saying what the
     * store waits for, so that a busy host or a server still loading its data does not fail the
     * start. Decisions keep {@link #commandTimeout}.
     */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = positive("startupTimeout", timeout);
      return this;
    }

    /**
     * Test hook: take the time from this supplier (microseconds) instead of Redis {@code TIME}.
     * Keys then expire 60 s after their idle instant, as Redis expires them on its own clock.
     * Production code leaves it unset: Redis time keeps app servers' clocks out of the decision.
     */
    public Builder timeSourceMicros(LongSupplier micros) {
      this.micros = Objects.requireNonNull(micros, "micros");
      return this;
    }

    /**
     * Connects and loads the script.
     *
     * @throws IllegalStateException naming the server if it cannot be reached
     */
    public RedisStore build() {
      try {
        return new RedisStore(this);
      } catch (RedisException e) {
        throw new IllegalStateException("Redis at " + redacted(uri) + " refused the store: "
            + RedisConnection.startupMessage(e), e);
      }
    }

    private static Duration positive(String name, Duration d) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive but was " + d);
      }
      return d;
    }
  }
}

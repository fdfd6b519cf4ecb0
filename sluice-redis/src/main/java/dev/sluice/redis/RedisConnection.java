package dev.sluice.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.api.sync.BaseRedisCommands;
import io.lettuce.core.api.sync.RedisKeyCommands;
import io.lettuce.core.api.sync.RedisScriptingCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The store's view of one Redis connection, standalone or cluster, whoever made it: the command
 * interfaces the store calls, the script's SHA-1 and what closing releases. The store's own
 * connections fail commands at once while disconnected (the failure policy answers) and
 * reconnect with a capped back-off.
 */
final class RedisConnection implements AutoCloseable {
  final RedisScriptingCommands<String, String> commands;
  final RedisKeyCommands<String, String> keyCommands;
  final BaseRedisCommands<String, String> pingCommands;
  final RedisScriptingAsyncCommands<String, String> asyncCommands;
  /** The cluster connection, whose partitions say which node owns a key; null if standalone. */
  final StatefulRedisClusterConnection<String, String> cluster;
  /** The script's SHA-1 as the server knows it. */
  final String sha;
  /** Closes what the store made (the connection, its client and resources); null for none. */
  private final AutoCloseable owned;

  private <S extends RedisScriptingCommands<String, String> & RedisKeyCommands<String, String>
      & BaseRedisCommands<String, String>> RedisConnection(S sync,
      RedisScriptingAsyncCommands<String, String> async,
      StatefulRedisClusterConnection<String, String> cluster, String sha, AutoCloseable owned) {
    this.commands = sync;
    this.keyCommands = sync;
    this.pingCommands = sync;
    this.asyncCommands = async;
    this.cluster = cluster;
    this.sha = sha;
    this.owned = owned;
  }

  /** The caller's connection, as configured; not closed by the store. */
  static RedisConnection of(StatefulRedisConnection<String, String> c) {
    return standalone(c, null);
  }

  /** The caller's cluster connection, as configured; not closed by the store. */
  static RedisConnection of(StatefulRedisClusterConnection<String, String> c) {
    return cluster(c, null);
  }

  private static RedisConnection standalone(StatefulRedisConnection<String, String> c,
      AutoCloseable owned) {
    return new RedisConnection(c.sync(), c.async(), null, c.sync().scriptLoad(RedisStore.SCRIPT),
        owned);
  }

  private static RedisConnection cluster(StatefulRedisClusterConnection<String, String> c,
      AutoCloseable owned) {
    // Not SCRIPT LOAD on every node (a dead replica would fail the build): each master loads the
    // script on its first NOSCRIPT, through EVAL.
    return new RedisConnection(c.sync(), c.async(), c, RedisStore.SHA, owned);
  }

  /**
   * Connects to the server at {@code uri} with {@code client}, or with a client of the store's
   * own when it is null (then shut down with the store).
   */
  static RedisConnection connect(RedisClient client, RedisURI uri, boolean uriTimeoutGiven,
      Duration connectTimeout, Duration commandTimeout, Duration reconnectDelayCap) {
    ClientResources resources = client != null ? null : reconnectingResources(reconnectDelayCap);
    RedisClient c = client != null ? client : RedisClient.create(resources);
    AutoCloseable release = client != null ? () -> { } : () -> {
      c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      resources.shutdown(0, 1, TimeUnit.SECONDS);
    };
    c.setOptions(ClientOptions.builder()
        .socketOptions(SocketOptions.builder().connectTimeout(connectTimeout).build())
        .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
        // While disconnected, fail at once instead of queueing: the failure policy answers.
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .build());
    StatefulRedisConnection<String, String> connection;
    try {
      connection = c.connect(client == null && !uriTimeoutGiven
          ? withHandshakeTimeout(uri, connectTimeout) : uri);
    } catch (RedisConnectionException e) {
      quietly(release);
      throw new IllegalStateException("cannot connect to Redis at " + RedisStore.redacted(uri)
          + ": " + RedisStore.rootMessage(e), e);
    }
    connection.setTimeout(commandTimeout);
    return connected(() -> standalone(connection, both(connection, release)), connection, release);
  }

  /** Connects to a Redis Cluster through its seeds, on a client of the store's own. */
  static RedisConnection connectCluster(List<RedisURI> seedUris, Duration topologyRefresh,
      Duration connectTimeout, Duration commandTimeout, Duration reconnectDelayCap, String name) {
    List<RedisURI> seeds = new ArrayList<>();
    for (RedisURI seed : seedUris) {
      seeds.add(withHandshakeTimeout(seed, connectTimeout));
    }
    ClientResources resources = reconnectingResources(reconnectDelayCap);
    RedisClusterClient client = RedisClusterClient.create(resources, seeds);
    AutoCloseable release = () -> {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      resources.shutdown(0, 1, TimeUnit.SECONDS);
    };
    ClusterTopologyRefreshOptions.Builder refresh = ClusterTopologyRefreshOptions.builder()
        .enableAllAdaptiveRefreshTriggers()
        .adaptiveRefreshTriggersTimeout(Duration.ofMillis(500))
        .refreshTriggersReconnectAttempts(1)
        .closeStaleConnections(true);
    if (topologyRefresh != null) {
      refresh.enablePeriodicRefresh(topologyRefresh);
    }
    client.setOptions(ClusterClientOptions.builder()
        .socketOptions(SocketOptions.builder().connectTimeout(connectTimeout).build())
        .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
        .topologyRefreshOptions(refresh.build())
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .build());
    StatefulRedisClusterConnection<String, String> connection;
    try {
      connection = client.connect();
    } catch (RedisException e) {
      quietly(release);
      throw new IllegalStateException("cannot connect to the Redis Cluster at " + name + ": "
          + RedisStore.rootMessage(e), e);
    }
    connection.setTimeout(commandTimeout);
    return connected(() -> cluster(connection, both(connection, release)), connection, release);
  }

  /** The connection, or, if loading the script fails, everything released and the failure. */
  private static RedisConnection connected(Supplier<RedisConnection> make,
      AutoCloseable connection, AutoCloseable release) {
    try {
      return make.get();
    } catch (RuntimeException e) {
      quietly(connection);
      quietly(release);
      throw e;
    }
  }

  private static AutoCloseable both(AutoCloseable first, AutoCloseable then) {
    return () -> {
      quietly(first);
      then.close();
    };
  }

  private static ClientResources reconnectingResources(Duration cap) {
    return DefaultClientResources.builder()
        .reconnectDelay(Delay.exponential(Duration.ofMillis(1), cap, 2, TimeUnit.MILLISECONDS))
        .build();
  }

  /**
   * The URI with the connect timeout as its timeout, which Lettuce uses for the connection's
   * handshake (HELLO, AUTH, PING): a server that accepts connections but never answers (stopped,
   * swapped out) fails the build within it, not after Lettuce's default minute.
   */
  private static RedisURI withHandshakeTimeout(RedisURI uri, Duration connectTimeout) {
    uri.setTimeout(connectTimeout);   // only URIs the builder parsed itself come here
    return uri;
  }

  private static void quietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // closing is best effort
    }
  }

  /** Releases what the store made; a connection of the caller's stays open. */
  @Override
  public void close() {
    if (owned != null) {
      quietly(owned);
    }
  }
}

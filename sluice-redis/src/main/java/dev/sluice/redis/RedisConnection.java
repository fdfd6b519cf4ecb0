package dev.sluice.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
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
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The store's view of one Redis connection, standalone or cluster, whoever made it: the command
 * interfaces the store calls, the script's SHA-1 and what closing releases. The store's own
 * connections fail commands at once while disconnected (the failure policy answers) and
 * reconnect with a capped back-off.
 */
final class RedisConnection implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RedisConnection.class.getName());
  /** The first wait between two startup attempts; it doubles up to {@link #LAST_RETRY}. */
  static final Duration FIRST_RETRY = Duration.ofMillis(50);
  static final Duration LAST_RETRY = Duration.ofSeconds(1);
  /** Where a startup's waits are told: the log at INFO (tests listen here). */
  static volatile Consumer<String> said = m -> LOG.log(System.Logger.Level.INFO, m);
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

  /**
   * A connection of the store's own: the script loaded within the startup deadline (the store's
   * SCRIPT commands have the startup timeout, not the decisions'), tried again with backoff
   * while Redis fails to answer (a busy host, a server still loading its data).
   */
  private static RedisConnection standalone(StatefulRedisConnection<String, String> c,
      AutoCloseable owned, Startup startup) {
    String sha = startup.attempt("load Sluice's script", () -> {
      try {
        return c.async().scriptLoad(RedisStore.SCRIPT).get(startup.leftNanos(),
            TimeUnit.NANOSECONDS);
      } catch (ExecutionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : new RedisException(e.getCause());
      } catch (TimeoutException e) {
        throw new RedisException("no answer within the startup timeout");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedisException("interrupted while waiting for Redis");
      }
    });
    return new RedisConnection(c.sync(), c.async(), null, sha, owned);
  }

  /**
   * The deadline of a build: what the store waits for (connecting, loading the script) is tried
   * again with backoff (50 ms doubling to 1 s) until it, each failed attempt logged at INFO with
   * what the store waits for; decisions keep their own, short timeout.
   */
  static final class Startup {
    private final String where;
    private final long deadline;
    private final Duration timeout;

    Startup(String where, Duration timeout) {
      this.where = where;
      this.timeout = timeout;
      this.deadline = System.nanoTime() + timeout.toNanos();
    }

    long leftNanos() {
      return Math.max(1, deadline - System.nanoTime());
    }

    /** Runs {@code step} until it succeeds or the deadline passes (then its last failure). */
    <T> T attempt(String what, Supplier<T> step) {
      long wait = FIRST_RETRY.toNanos();
      for (int n = 1; ; n++) {
        try {
          return step.get();
        } catch (RedisException e) {
          long left = deadline - System.nanoTime();
          if (!passing(e)) {
            throw e;   // a refusal (a wrong password, no cluster support): no wait mends it
          }
          if (left <= wait) {
            throw new GaveUp(RedisStore.rootMessage(e) + " (" + n + " attempt"
                + (n == 1 ? "" : "s") + " to " + what + " in the startup timeout of "
                + timeout.toMillis() + " ms)", e);
          }
          said.accept("waiting for Redis at " + where + " to " + what + " (attempt " + n + ": "
              + RedisStore.rootMessage(e) + "); trying again in " + wait / 1_000_000
              + " ms, for " + left / 1_000_000 + " ms more at most");
          try {
            TimeUnit.NANOSECONDS.sleep(wait);
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new RedisException("interrupted while waiting to " + what + " at " + where, e);
          }
          wait = Math.min(LAST_RETRY.toNanos(), wait * 2);
        }
      }
    }
  }

  /** A startup step that failed until the startup deadline: its message says how often. */
  static final class GaveUp extends RedisException {
    private static final long serialVersionUID = 1L;

    GaveUp(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** The message of a startup failure: the attempts made, or the root cause's. */
  static String startupMessage(RuntimeException e) {
    return e instanceof GaveUp ? e.getMessage() : RedisStore.rootMessage(e);
  }

  /**
   * Whether a failed startup step may succeed if tried again: no connection or no answer yet, or
   * a server that says it is not ready (LOADING its data, BUSY with a script, MASTERDOWN,
   * TRYAGAIN); not one that refuses (a wrong password, an unknown command, no cluster support).
   */
  static boolean passing(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof RedisCommandExecutionException) {
        String m = String.valueOf(t.getMessage());
        return m.startsWith("LOADING") || m.startsWith("BUSY") || m.startsWith("MASTERDOWN")
            || m.startsWith("TRYAGAIN");
      }
      for (Throwable s : t.getSuppressed()) {   // a cluster's seeds each say why
        if (!passing(s)) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * Decisions time out after {@code command}; the store's SCRIPT commands (loading its script at
   * build) after {@code startup}.
   */
  private static TimeoutOptions timeouts(Duration command, Duration startup) {
    long commandNanos = command.toNanos();
    long startupNanos = startup.toNanos();
    return TimeoutOptions.builder().timeoutCommands().timeoutSource(
        new TimeoutOptions.TimeoutSource() {
          @Override
          public long getTimeout(RedisCommand<?, ?, ?> c) {
            return c.getType() == CommandType.SCRIPT ? startupNanos : commandNanos;
          }

          @Override
          public TimeUnit getTimeUnit() {
            return TimeUnit.NANOSECONDS;
          }
        }).build();
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
  // FutureReturnValueIgnored: the client's resources shut down in the background; close() does not wait for them
  @SuppressWarnings("FutureReturnValueIgnored")
  static RedisConnection connect(RedisClient client, RedisURI uri, boolean uriTimeoutGiven,
      Duration connectTimeout, Duration commandTimeout, Duration reconnectDelayCap,
      Duration startupTimeout) {
    Startup startup = new Startup(RedisStore.redacted(uri), startupTimeout);
    ClientResources resources = client != null ? null : reconnectingResources(reconnectDelayCap);
    RedisClient c = client != null ? client : RedisClient.create(resources);
    AutoCloseable release = client != null ? () -> { } : () -> {
      c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      resources.shutdown(0, 1, TimeUnit.SECONDS);
    };
    c.setOptions(ClientOptions.builder()
        .socketOptions(SocketOptions.builder().connectTimeout(connectTimeout).build())
        .timeoutOptions(timeouts(commandTimeout, startupTimeout))
        // While disconnected, fail at once instead of queueing: the failure policy answers.
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .build());
    RedisURI target = client == null && !uriTimeoutGiven
        ? withHandshakeTimeout(uri, connectTimeout) : uri;
    StatefulRedisConnection<String, String> connection;
    try {
      connection = startup.attempt("connect", () -> c.connect(target));
    } catch (RedisException e) {
      quietly(release);
      throw new IllegalStateException("cannot connect to Redis at " + RedisStore.redacted(uri)
          + ": " + startupMessage(e), e);
    }
    connection.setTimeout(commandTimeout);
    return connected(() -> standalone(connection, both(connection, release), startup), connection,
        release);
  }

  /** Connects to a Redis Cluster through its seeds, on a client of the store's own. */
  // FutureReturnValueIgnored: the client's resources shut down in the background; close() does not wait for them
  @SuppressWarnings("FutureReturnValueIgnored")
  static RedisConnection connectCluster(List<RedisURI> seedUris, Duration topologyRefresh,
      Duration connectTimeout, Duration commandTimeout, Duration reconnectDelayCap, String name,
      Duration startupTimeout) {
    Startup startup = new Startup(name, startupTimeout);
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
        .timeoutOptions(timeouts(commandTimeout, startupTimeout))
        .topologyRefreshOptions(refresh.build())
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .build());
    StatefulRedisClusterConnection<String, String> connection;
    try {
      connection = startup.attempt("connect", client::connect);
    } catch (RedisException e) {
      quietly(release);
      throw new IllegalStateException("cannot connect to the Redis Cluster at " + name + ": "
          + startupMessage(e), e);
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

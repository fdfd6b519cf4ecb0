package dev.sluice.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.ServerSocket;
import java.time.Duration;
import redis.embedded.RedisServer;

/**
 * The Redis the tests use: {@code SLUICE_REDIS_URI} if set, else a real redis-server (6.2, from
 * the embedded-redis artifact) started once on a free loopback port and stopped at exit. Never
 * skipped: if neither works, the tests fail.
 */
final class TestRedis {
  /**
   * The timeout of the stores that the semantic tests use (the conformance suite, the golden
   * vectors): a busy host may hold one call past the default, and those tests are about what a
   * decision is; the fault tests are the ones about timeouts.
   */
  static final java.time.Duration SEMANTICS_TIMEOUT = java.time.Duration.ofSeconds(10);

  private static String uri;
  private static StatefulRedisConnection<String, String> connection;

  private TestRedis() {}

  /** A dedicated real Redis on this port, for tests that stop, restart or slow it. */
  static RedisServer startServer(int port) throws IOException {
    RedisServer server = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    server.start();
    return server;
  }

  /** One connection shared by the tests (Lettuce multiplexes it across threads). */
  static synchronized StatefulRedisConnection<String, String> connection() {
    if (connection == null) {
      RedisClient client = RedisClient.create(uri());
      connection = client.connect();
      connection.setTimeout(Duration.ofSeconds(10));
    }
    return connection;
  }

  static synchronized String uri() {
    if (uri != null) {
      return uri;
    }
    String external = System.getenv("SLUICE_REDIS_URI");
    if (external != null && !external.isBlank()) {
      return uri = external;
    }
    try {
      int port;
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      RedisServer server = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
          .setting("save \"\"").setting("appendonly no").build();
      server.start();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          server.stop();
        } catch (IOException ignored) {
          // the JVM is exiting
        }
      }));
      return uri = "redis://127.0.0.1:" + port;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start an embedded Redis", e);
    }
  }

  /** Every key matching {@code pattern}, following the SCAN cursor to its end. */
  static java.util.List<String> keys(String pattern) {
    java.util.List<String> keys = new java.util.ArrayList<>();
    io.lettuce.core.ScanArgs args = io.lettuce.core.ScanArgs.Builder.matches(pattern).limit(10_000);
    io.lettuce.core.KeyScanCursor<String> cursor = connection().sync().scan(args);
    keys.addAll(cursor.getKeys());
    while (!cursor.isFinished()) {
      cursor = connection().sync().scan(cursor, args);
      keys.addAll(cursor.getKeys());
    }
    return keys;
  }
}

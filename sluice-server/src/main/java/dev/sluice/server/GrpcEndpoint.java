package dev.sluice.server;

import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The gRPC server of Envoy's rate limit service, with the gRPC health service answering
 * SERVING for {@code ""} and {@code "ratelimit"}, as envoyproxy/ratelimit registers them.
 */
final class GrpcEndpoint implements AutoCloseable {
  private final Server server;
  private final HealthStatusManager health;
  private final Duration grace;

  private GrpcEndpoint(Server server, HealthStatusManager health, Duration grace) {
    this.server = server;
    this.health = health;
    this.grace = grace;
  }

  static GrpcEndpoint start(String host, int port, EnvoyService envoy, Duration grace)
      throws IOException {
    HealthStatusManager health = new HealthStatusManager();
    health.setStatus("ratelimit", HealthCheckResponse.ServingStatus.SERVING);
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
        .directExecutor()
        .addService(envoy.definition()).addService(health.getHealthService())
        .build().start();
    return new GrpcEndpoint(server, health, grace);
  }

  int port() {
    return server.getPort();
  }

  /** Health NOT_SERVING, then calls in flight finish within the grace, then the rest stop. */
  @Override
  public void close() {
    health.enterTerminalState();
    server.shutdown();
    try {
      if (!server.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}

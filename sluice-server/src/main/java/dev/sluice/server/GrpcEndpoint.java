package dev.sluice.server;

import dev.sluice.health.HealthShedder;
import dev.sluice.internal.FilterPolicy;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
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

  /**
   * Starts the server; with {@code shedder} (the service's own, {@code --shed-cpu}), each call of
   * Envoy's service asks it first, at the priority of its {@code x-priority} metadata, and a shed
   * call ends at once with {@code UNAVAILABLE} naming the signal (Envoy then applies its
   * {@code failure_mode_deny}); the health service is never shed.
   */
  static GrpcEndpoint start(String host, int port, EnvoyService envoy, Duration grace,
      HealthShedder shedder) throws IOException {
    HealthStatusManager health = new HealthStatusManager();
    health.setStatus("ratelimit", HealthCheckResponse.ServingStatus.SERVING);
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
        .directExecutor()
        .addService(shedder == null ? envoy.definition()
            : ServerInterceptors.intercept(envoy.definition(), new Shedding(shedder)))
        .addService(health.getHealthService())
        .build().start();
    return new GrpcEndpoint(server, health, grace);
  }

  /** Sheds calls by the service's own health before they reach Envoy's service. */
  static final class Shedding implements ServerInterceptor {
    static final Metadata.Key<String> PRIORITY =
        Metadata.Key.of("x-priority", Metadata.ASCII_STRING_MARSHALLER);
    /** gRPC's retry pushback: a client that retries waits this long (a second, as Retry-After). */
    static final Metadata.Key<String> PUSHBACK =
        Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);
    private final HealthShedder shedder;

    Shedding(HealthShedder shedder) {
      this.shedder = shedder;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
        ServerCallHandler<Q, A> next) {
      HealthShedder.Verdict verdict =
          shedder.admit(FilterPolicy.priorityNamed(headers.get(PRIORITY)));
      if (!verdict.admitted()) {
        Metadata trailers = new Metadata();
        trailers.put(PUSHBACK, "1000");
        call.close(Status.UNAVAILABLE.withDescription("shedding load: " + verdict.reason()),
            trailers);
        return new ServerCall.Listener<>() { };
      }
      ServerCall.Listener<Q> listener;
      try {
        listener = next.startCall(call, headers);
      } catch (RuntimeException e) {
        verdict.end();
        throw e;
      }
      return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
        @Override
        public void onComplete() {
          verdict.end();
          super.onComplete();
        }

        @Override
        public void onCancel() {
          verdict.end();
          super.onCancel();
        }
      };
    }
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

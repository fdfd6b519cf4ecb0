package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.Sluice;
import dev.sluice.concurrency.AdaptiveThrottle;
import dev.sluice.concurrency.RetryBudget;
import dev.sluice.testkit.ManualClock;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The client interceptor against a real grpc-java server: a transient failure is retried; a
 * storm of failures is met with the budget's retries only; a server's pushback is obeyed; a
 * backend that refuses everything is sent little, the rest refused locally.
 */
class SluiceClientInterceptorTest {
  private final EchoService echo = new EchoService();
  private final ManualClock clock = new ManualClock();
  private Server server;
  private ManagedChannel managed;

  private Channel channel(SluiceClientInterceptor interceptor) throws Exception {
    return channel(interceptor, null);
  }

  private Channel channel(SluiceClientInterceptor interceptor, SluiceServerInterceptor limits)
      throws Exception {
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(limits == null ? echo.bindService() : ServerInterceptors.intercept(echo,
            limits)).build().start();
    managed = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext()
        .disableRetry().build();
    return ClientInterceptors.intercept(managed, interceptor);
  }

  @AfterEach
  void stop() throws Exception {
    if (managed != null) {
      managed.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  private static String say(Channel c, String message) {
    return ClientCalls.blockingUnaryCall(c, EchoService.SAY,
        CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), message);
  }

  private RetryBudget.Builder budget() {
    return RetryBudget.builder().clock(clock);
  }

  @Test
  void aTransientFailure_isRetried_andSucceeds() throws Exception {
    RetryBudget b = budget().ratio(0.1).minPerSecond(1).build();
    Channel c = channel(SluiceClientInterceptor.builder().retryBudget(b)
        .backoff(Duration.ZERO, Duration.ZERO).build());
    assertThat(say(c, "once:1")).isEqualTo("once:1");
    assertThat(echo.calls.get()).as("a failure, then its retry").isEqualTo(2);
    assertThat(b.retriesAllowed()).isEqualTo(1);
    assertThat(b.successes()).isEqualTo(1);
  }

  @Test
  void aRetryStorm_isContainedByTheBudget() throws Exception {
    RetryBudget b = budget().ratio(0.1).minPerSecond(1).window(Duration.ofSeconds(10)).build();
    Channel c = channel(SluiceClientInterceptor.builder().retryBudget(b).maxAttempts(4)
        .backoff(Duration.ZERO, Duration.ZERO).build());
    for (int i = 0; i < 100; i++) {
      say(c, "ok");
    }
    int calls = 200;
    for (int i = 0; i < calls; i++) {
      assertThatThrownBy(() -> say(c, "fail:UNAVAILABLE"))
          .isInstanceOf(StatusRuntimeException.class);
    }
    // without a budget: 200 x 4 attempts; with it: 0.1 x 100 successes + 1/s x 10 s retries
    assertThat(echo.calls.get() - 100).isEqualTo(calls + 20);
    assertThat(b.retriesAllowed()).isEqualTo(20);
    assertThat(b.retriesRefused()).as("every later call asked once and was refused")
        .isGreaterThanOrEqualTo(calls - 20);
  }

  /**
   * grpc-java's own retry policy (4 attempts on UNAVAILABLE, from the channel's service config)
   * within the budget: a refused retry is vetoed through the attempt's trailers, so 200 failing
   * calls reach the server 200 + 10 times (the floor), not 800.
   */
  @Test
  void grpcJavasOwnRetries_withinTheBudget() throws Exception {
    RetryBudget b = budget().ratio(0.1).minPerSecond(1).window(Duration.ofSeconds(10)).build();
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(echo.bindService()).build().start();
    Map<String, Object> policy = Map.of("maxAttempts", 4.0, "initialBackoff", "0.001s",
        "maxBackoff", "0.002s", "backoffMultiplier", 2.0,
        "retryableStatusCodes", List.of("UNAVAILABLE"));
    managed = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext()
        .enableRetry().defaultServiceConfig(Map.of("methodConfig", List.of(Map.of(
            "name", List.of(Map.of("service", "test.Echo")), "retryPolicy", policy))))
        .build();
    Channel c = ClientInterceptors.intercept(managed, SluiceClientInterceptor.builder()
        .retryBudget(b).maxAttempts(4).grpcRetries().build());
    assertThat(say(c, "once:grpc")).as("a transient failure, retried by grpc-java")
        .isEqualTo("once:grpc");
    assertThat(echo.calls.get()).isEqualTo(2);
    for (int i = 0; i < 200; i++) {
      assertThatThrownBy(() -> say(c, "fail:UNAVAILABLE"))
          .isInstanceOf(StatusRuntimeException.class);
    }
    assertThat(echo.calls.get() - 2).as("200 calls and the budget's retries").isEqualTo(
        200 + b.retriesAllowed() - 1);
    assertThat(b.retriesAllowed()).as("1/s x 10 s + 0.1 x 1 success, the first retry among"
        + " them").isEqualTo(10);
  }

  @Test
  void onlyTheCodesAsked_areRetried() throws Exception {
    RetryBudget b = budget().ratio(1).minPerSecond(100).build();
    Channel c = channel(SluiceClientInterceptor.builder().retryBudget(b)
        .backoff(Duration.ZERO, Duration.ZERO).build());
    assertThatThrownBy(() -> say(c, "fail:INVALID_ARGUMENT"))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    assertThat(echo.calls.get()).isEqualTo(1);
    assertThatThrownBy(() -> say(c, "fail:UNAVAILABLE"))
        .isInstanceOf(StatusRuntimeException.class);
    assertThat(echo.calls.get()).as("1 + 3 attempts").isEqualTo(4);
  }

  @Test
  void aServersPushback_longerThanTheDeadline_isNotRetried() throws Exception {
    RetryBudget b = budget().ratio(1).minPerSecond(100).build();
    SluiceServerInterceptor limits = SluiceServerInterceptor.builder().rate("api",
        Sluice.builder().limits(Limit.leakyBucket(1, Rate.perHour(1))).build(),
        GrpcKey.global("all")).build();
    Channel c = channel(SluiceClientInterceptor.builder().retryBudget(b)
        .retryOn(Status.Code.RESOURCE_EXHAUSTED, Status.Code.UNAVAILABLE)
        .backoff(Duration.ZERO, Duration.ZERO).build(), limits);
    assertThat(say(c, "a")).isEqualTo("a");
    assertThatThrownBy(() -> say(c, "b")).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
    assertThat(b.retriesAllowed()).as("an hour's pushback, a 30 s deadline: no retry").isZero();
  }

  @Test
  void aBackendThatRefusesEverything_isSentLittle_theRestRefusedLocally() throws Exception {
    Random random = new Random(7);
    AdaptiveThrottle t = AdaptiveThrottle.builder().k(2).window(Duration.ofMinutes(1))
        .clock(clock).random(random::nextDouble).build();
    Channel c = channel(SluiceClientInterceptor.builder().throttle(t).build());
    int local = 0;
    for (int i = 0; i < 200; i++) {
      try {
        say(c, "fail:RESOURCE_EXHAUSTED");
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getDescription() != null
            && e.getStatus().getDescription().startsWith("refused locally")) {
          local++;
        }
      }
    }
    assertThat(local + echo.calls.get()).isEqualTo(200);
    assertThat(echo.calls.get()).as("with no call accepted, few are sent").isLessThan(20);
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> SluiceClientInterceptor.builder().maxAttempts(0))
        .hasMessage("maxAttempts must be between 1 and 10 but was 0");
    assertThatThrownBy(() -> SluiceClientInterceptor.builder().retryOn(Status.Code.OK))
        .hasMessage("OK is not a failure to retry");
    assertThatThrownBy(() -> SluiceClientInterceptor.builder().backoff(Duration.ofSeconds(2),
        Duration.ofSeconds(1))).hasMessageContaining("backoff must be 0 <= initial <= max");
  }
}

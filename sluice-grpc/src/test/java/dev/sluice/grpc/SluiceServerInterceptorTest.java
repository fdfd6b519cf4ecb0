package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import dev.sluice.spi.StoreUnavailableException;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The server interceptor on a real grpc-java server (Netty, a loopback port) called by a real
 * client: rate refusals with the limit named and retry pushback; a permit held for each call's
 * life (unary, server streaming, bidirectional), released exactly once on completion, error or
 * cancellation; waits bounded by the call's own deadline; outcomes to adaptive limits; exact
 * accounting under many threads.
 */
class SluiceServerInterceptorTest {
  private static final Metadata.Key<String> API_KEY =
      Metadata.Key.of("x-api-key", Metadata.ASCII_STRING_MARSHALLER);
  private final EchoService echo = new EchoService();
  private Server server;
  private ManagedChannel channel;

  private void start(SluiceServerInterceptor interceptor) throws Exception {
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(ServerInterceptors.intercept(echo, interceptor)).build().start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext()
        .build();
  }

  @AfterEach
  void stop() throws Exception {
    echo.release.countDown();
    if (channel != null) {
      channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  private String say(String message, String apiKey) {
    CallOptions o = CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS);
    return apiKey != null ? sayAs(message, apiKey, o)
        : ClientCalls.blockingUnaryCall(channel, EchoService.SAY, o, message);
  }

  private String sayAs(String message, String apiKey, CallOptions options) {
    Metadata h = new Metadata();
    h.put(API_KEY, apiKey);
    return ClientCalls.blockingUnaryCall(ClientInterceptors.intercept(channel,
        MetadataUtils.newAttachHeadersInterceptor(h)), EchoService.SAY, options, message);
  }

  private static void until(BooleanSupplier condition, String what) {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not within 20 s: " + what);
      }
      Thread.onSpinWait();
    }
  }

  @Test
  void aRateRefusal_namesTheLimit_andSaysWhenToRetry() throws Exception {
    RateLimiter api = Sluice.builder().limits(Limit.leakyBucket(2, Rate.perHour(1))).build();
    start(SluiceServerInterceptor.builder().rate("api", api, GrpcKey.metadata("x-api-key"))
        .build());
    CallOptions o = CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS);
    assertThat(sayAs("a", "acme", o)).isEqualTo("a");
    assertThat(sayAs("b", "acme", o)).isEqualTo("b");
    assertThatThrownBy(() -> sayAs("c", "acme", o)).isInstanceOfSatisfying(
        StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
          assertThat(e.getStatus().getDescription()).startsWith("rate limit 'api' exceeded;"
              + " retry in ");
          assertThat(Long.parseLong(e.getTrailers().get(SluiceServerInterceptor.RETRY_PUSHBACK)))
              .as("an hour until a unit leaks (1/h)").isBetween(3_500_000L, 3_600_000L);
        });
    assertThat(sayAs("d", "globex", o)).as("another key").isEqualTo("d");
    assertThat(say("e", null)).as("no key: the rule does not apply").isEqualTo("e");
    assertThat(echo.calls.get()).isEqualTo(4);
  }

  @Test
  void aPermit_isHeldForTheCallsLife_andTheNextIsRefused() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(2).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    echo.release = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<String> one = pool.submit(() -> say("hold", null));
      Future<String> two = pool.submit(() -> say("hold", null));
      until(() -> echo.running.get() == 2, "two calls running");
      assertThat(db.inFlight("test.Echo/Say")).isEqualTo(2);
      assertThatThrownBy(() -> say("x", null)).isInstanceOfSatisfying(
          StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription())
                .isEqualTo("concurrency limit 'db' refused the call (full)");
            assertThat(e.getTrailers().get(SluiceServerInterceptor.RETRY_PUSHBACK))
                .isEqualTo("1000");
          });
      echo.release.countDown();
      assertThat(one.get(20, TimeUnit.SECONDS)).isEqualTo("hold");
      assertThat(two.get(20, TimeUnit.SECONDS)).isEqualTo("hold");
      until(() -> db.inFlight("test.Echo/Say") == 0, "both permits back");
      until(() -> db.stats().ended(Outcome.SUCCESS) == 2, "both ended as successes");
      assertThat(db.stats().refused()).as("the refused call counted once").isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aCallWaits_forAPermit_withoutAThread_untilOneIsFree() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1).maxWaiters(10).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.global("all"))
        .maxWait(Duration.ofSeconds(20)).build());
    echo.release = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<String> first = pool.submit(() -> say("hold", null));
      until(() -> echo.running.get() == 1, "the first call running");
      Future<String> second = pool.submit(() -> say("next", null));
      until(() -> db.waiting("all") == 1, "the second waiting");
      assertThat(echo.calls.get()).as("not started while it waits").isEqualTo(1);
      echo.release.countDown();
      assertThat(first.get(20, TimeUnit.SECONDS)).isEqualTo("hold");
      assertThat(second.get(20, TimeUnit.SECONDS)).isEqualTo("next");
      until(() -> db.inFlight("all") == 0, "permits back");
      assertThat(echo.mostRunning.get()).isEqualTo(1);
      assertThat(db.stats().refused()).as("the call that waited was not refused").isZero();
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aWait_isBoundedByTheCallsDeadline() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1).maxWaiters(10).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.global("all"))
        .maxWait(Duration.ofMinutes(5)).build());
    echo.release = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(1);
    try {
      Future<String> first = pool.submit(() -> say("hold", null));
      until(() -> echo.running.get() == 1, "the first call running");
      long start = System.nanoTime();
      assertThatThrownBy(() -> ClientCalls.blockingUnaryCall(channel, EchoService.SAY,
          CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS), "late"))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
              e.getStatus().getCode()).isIn(Status.Code.RESOURCE_EXHAUSTED,
              Status.Code.DEADLINE_EXCEEDED));
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("over by the call's deadline, not the 5 minutes of maxWait")
          .isLessThan(Duration.ofSeconds(20));
      until(() -> db.waiting("all") == 0, "the waiter gone");
      echo.release.countDown();
      assertThat(first.get(20, TimeUnit.SECONDS)).isEqualTo("hold");
      until(() -> db.inFlight("all") == 0, "permits back");
      assertThat(echo.calls.get()).as("the late call never ran").isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void serverStreaming_holdsItsPermitUntilItCompletes() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    echo.release = new CountDownLatch(1);
    Iterator<String> stream = ClientCalls.blockingServerStreamingCall(channel, EchoService.COUNT,
        CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), "3");
    assertThat(stream.next()).isEqualTo("1");
    assertThat(stream.next()).isEqualTo("2");
    assertThat(db.inFlight("test.Echo/Count")).as("streaming: held").isEqualTo(1);
    echo.release.countDown();
    assertThat(stream.next()).isEqualTo("3");
    assertThat(stream.hasNext()).isFalse();
    until(() -> db.inFlight("test.Echo/Count") == 0, "released at completion");
    until(() -> db.stats().ended(Outcome.SUCCESS) == 1, "ended as a success");
  }

  @Test
  void bidirectional_cancelledByTheClient_releasesOnce_asDropped() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    ClientCall<String, String> call = channel.newCall(EchoService.CHAT, CallOptions.DEFAULT);
    CompletableFuture<String> first = new CompletableFuture<>();
    CompletableFuture<Status> closed = new CompletableFuture<>();
    StreamObserver<String> out = ClientCalls.asyncBidiStreamingCall(call, new StreamObserver<>() {
      @Override
      public void onNext(String value) {
        first.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        closed.complete(Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
        closed.complete(Status.OK);
      }
    });
    out.onNext("hello");
    assertThat(first.get(20, TimeUnit.SECONDS)).isEqualTo("hello");
    assertThat(db.inFlight("test.Echo/Chat")).isEqualTo(1);
    call.cancel("the user went away", null);
    assertThat(closed.get(20, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.CANCELLED);
    until(() -> db.inFlight("test.Echo/Chat") == 0, "released on cancel");
    until(() -> db.stats().ended(Outcome.DROPPED) == 1, "counted as dropped");
    assertThat(db.stats().ended(Outcome.SUCCESS) + db.stats().ended(Outcome.IGNORED))
        .as("once").isZero();
  }

  @Test
  void outcomes_reachTheLimit_asTheStatusSays() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(4).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    say("ok", null);
    for (String code : List.of("DEADLINE_EXCEEDED", "UNAVAILABLE", "INVALID_ARGUMENT")) {
      assertThatThrownBy(() -> say("fail:" + code, null))
          .isInstanceOf(StatusRuntimeException.class);
    }
    until(() -> db.inFlight("test.Echo/Say") == 0, "all back");
    until(() -> db.stats().ended(Outcome.SUCCESS) + db.stats().ended(Outcome.DROPPED)
        + db.stats().ended(Outcome.IGNORED) == 4, "all four ended");
    assertThat(db.stats().ended(Outcome.SUCCESS)).isEqualTo(1);
    assertThat(db.stats().ended(Outcome.DROPPED)).isEqualTo(2);
    assertThat(db.stats().ended(Outcome.IGNORED)).isEqualTo(1);
  }

  @Test
  void manyThreads_neverMoreInFlightThanTheLimit_andEveryPermitBack() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(4).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    int threads = 16;
    int each = 100;
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<?>> done = new ArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    for (int t = 0; t < threads; t++) {
      done.add(pool.submit(() -> {
        go.await();
        for (int i = 0; i < each; i++) {
          try {
            say("m", null);
            ok.incrementAndGet();
          } catch (StatusRuntimeException e) {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            refused.incrementAndGet();
          }
        }
        return null;
      }));
    }
    go.countDown();
    for (Future<?> f : done) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(ok.get() + refused.get()).isEqualTo(threads * each);
    assertThat(db.stats().refused()).as("each refusal counted once").isEqualTo(refused.get());
    assertThat(echo.mostRunning.get()).as("the limit held").isLessThanOrEqualTo(4);
    assertThat(echo.calls.get()).as("every admitted call ran, no refused one").isEqualTo(ok.get());
    until(() -> db.inFlight("test.Echo/Say") == 0, "every permit back");
    assertThat(db.stats().acquired()).isEqualTo(ok.get());
    until(() -> db.stats().ended(Outcome.SUCCESS) == ok.get(), "every admitted call ended");
  }

  /** A store that cannot be reached: every call throws. */
  private static final class DownStore implements DecisionStore {
    @Override
    public long ticksPerSecond() {
      return 1_000_000;
    }

    @Override
    public Observation apply(String key, StoreRequest request) {
      throw new StoreUnavailableException("the store is down", null);
    }

    @Override
    public void reset(String key) {
    }
  }

  @Test
  void aStoreFailingClosed_isUnavailable_notExhausted() throws Exception {
    RateLimiter api = Sluice.builder().limits(Limit.leakyBucket(10, Rate.perSecond(1)))
        .store(new DownStore()).onStoreFailure(StoreFailure.FAIL_CLOSED).build();
    start(SluiceServerInterceptor.builder().rate("api", api, GrpcKey.global("all")).build());
    assertThatThrownBy(() -> say("a", null)).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(e.getStatus().getDescription()).isEqualTo("rate limit 'api' cannot be"
              + " decided: its store is unavailable");
        });
    assertThat(echo.calls.get()).isZero();
  }

  /** A critical call takes the general path (a permit object): cancelled, it is released too. */
  @Test
  void aCriticalBidirectionalCall_cancelled_releasesOnce() throws Exception {
    ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(1).build();
    start(SluiceServerInterceptor.builder().concurrency("db", db, GrpcKey.method()).build());
    Metadata h = new Metadata();
    h.put(Metadata.Key.of("x-priority", Metadata.ASCII_STRING_MARSHALLER), "critical");
    ClientCall<String, String> call = ClientInterceptors.intercept(channel,
        MetadataUtils.newAttachHeadersInterceptor(h)).newCall(EchoService.CHAT,
        CallOptions.DEFAULT);
    CompletableFuture<String> first = new CompletableFuture<>();
    StreamObserver<String> out = ClientCalls.asyncBidiStreamingCall(call, new StreamObserver<>() {
      @Override
      public void onNext(String value) {
        first.complete(value);
      }

      @Override
      public void onError(Throwable t) {
      }

      @Override
      public void onCompleted() {
      }
    });
    out.onNext("hi");
    assertThat(first.get(20, TimeUnit.SECONDS)).isEqualTo("hi");
    assertThat(db.inFlight("test.Echo/Chat")).isEqualTo(1);
    call.cancel("gone", null);
    until(() -> db.inFlight("test.Echo/Chat") == 0, "released on cancel");
    until(() -> db.stats().ended(Outcome.DROPPED) == 1, "counted once, as dropped");
  }

  @Test
  void badSettings_areNamed() {
    assertThatThrownBy(() -> SluiceServerInterceptor.builder().build())
        .hasMessageContaining("the interceptor has no rule");
    assertThatThrownBy(() -> SluiceServerInterceptor.builder().rate("api", "Orders",
        Sluice.builder().limits(Limit.leakyBucket(1, Rate.perSecond(1))).build(),
        GrpcKey.method())).hasMessageContaining("methods must be a full method name"
        + " (package.Service/Method) or a service's methods (package.Service/*) but was"
        + " 'Orders'");
    assertThatThrownBy(() -> GrpcKey.metadata("token-bin"))
        .hasMessageContaining("a key's metadata must be an ASCII key (not -bin) but was"
            + " 'token-bin'");
    assertThatThrownBy(() -> SluiceServerInterceptor.builder().maxWait(Duration.ofHours(1)))
        .hasMessage("maxWait must be between 0 and 10 minutes but was PT1H");
  }
}

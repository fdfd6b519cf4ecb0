package dev.sluice.benchmarks;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.grpc.server.ConcurrencyLimitServerInterceptor;
import com.netflix.concurrency.limits.grpc.server.GrpcServerRequestContext;
import com.netflix.concurrency.limits.limit.FixedLimit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.Sluice;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.grpc.GrpcKey;
import dev.sluice.grpc.SluiceServerInterceptor;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a gRPC server interceptor costs a call, apart from the transport: the interceptor's
 * {@code interceptCall}, the handler's start, and the call's {@code close(OK)}, on a call object
 * that does nothing else. Bare (no interceptor) against Sluice's interceptor with a concurrency
 * rule (one key, with room), with a rate rule (one key, never full), and against Netflix's own
 * {@code ConcurrencyLimitServerInterceptor} (concurrency-limits-grpc 0.3.6, the newest release
 * the registry serves, over this build's concurrency-limits-core 0.5.4) with a {@code
 * SimpleLimiter} of a fixed limit, and that limiter in an interceptor of the same shape
 * written here.
 *
 * <pre>
 * java -jar sluice-benchmarks/target/benchmarks.jar GrpcInterceptorBenchmark -t {1,2} -f 1 -wi 3 -w 1 -i 5 -r 1 -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GrpcInterceptorBenchmark {
  private static final MethodDescriptor.Marshaller<String> NONE =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
          return new ByteArrayInputStream(new byte[0]);
        }

        @Override
        public String parse(InputStream stream) {
          return "";
        }
      };
  private static final MethodDescriptor<String, String> METHOD = MethodDescriptor
      .<String, String>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName("bench.Echo/Say").setRequestMarshaller(NONE)
      .setResponseMarshaller(NONE).build();
  private static final Metadata TRAILERS = new Metadata();
  private static final ServerCall.Listener<String> LISTENER = new ServerCall.Listener<>() { };

  /** A call that does nothing: what the transport would do is left out. */
  static final class NoCall extends ServerCall<String, String> {
    @Override
    public void request(int numMessages) {
    }

    @Override
    public void sendHeaders(Metadata headers) {
    }

    @Override
    public void sendMessage(String message) {
    }

    @Override
    public void close(Status status, Metadata trailers) {
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public MethodDescriptor<String, String> getMethodDescriptor() {
      return METHOD;
    }
  }

  /** The call the handler was given (the interceptor's wrapper, if any), per thread. */
  @State(Scope.Thread)
  public static class Handler implements ServerCallHandler<String, String> {
    final NoCall call = new NoCall();
    final Metadata headers = new Metadata();
    ServerCall<String, String> started;

    @Override
    public ServerCall.Listener<String> startCall(ServerCall<String, String> call,
        Metadata headers) {
      started = call;
      return LISTENER;
    }
  }

  /** Netflix's limiter in the shape of its gRPC interceptor: acquire, release on close. */
  static final class NetflixShaped implements ServerInterceptor {
    private final Limiter<Void> limiter;

    NetflixShaped(Limiter<Void> limiter) {
      this.limiter = limiter;
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
        Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      Optional<Limiter.Listener> l = limiter.acquire(null);
      if (l.isEmpty()) {
        call.close(Status.UNAVAILABLE, new Metadata());
        return new ServerCall.Listener<>() { };
      }
      Limiter.Listener listener = l.get();
      return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
        @Override
        public void close(Status status, Metadata trailers) {
          super.close(status, trailers);
          if (status.isOk()) {
            listener.onSuccess();
          } else {
            listener.onIgnore();
          }
        }
      }, headers);
    }
  }

  private final SluiceServerInterceptor concurrency = SluiceServerInterceptor.builder()
      .concurrency("db", ConcurrencyLimiter.builder().limit(1_000).build(), GrpcKey.global("all"))
      .build();
  private final SluiceServerInterceptor rate = SluiceServerInterceptor.builder()
      .rate("api", Sluice.builder().limits(Limit.leakyBucket(1e12, Rate.perSecond(1e12)))
          .build(), GrpcKey.global("all"))
      .build();
  private final NetflixShaped netflix = new NetflixShaped(SimpleLimiter.newBuilder()
      .limit(FixedLimit.of(1_000)).build());
  private final ServerInterceptor netflixOwn = ConcurrencyLimitServerInterceptor.newBuilder(
      SimpleLimiter.newBuilder().limit(FixedLimit.of(1_000)).<GrpcServerRequestContext>build())
      .build();

  private static boolean through(ServerInterceptor interceptor, Handler h) {
    h.started = null;
    interceptor.interceptCall(h.call, h.headers, h);
    ServerCall<String, String> started = h.started;
    if (started == null) {
      return false;
    }
    started.close(Status.OK, TRAILERS);
    return true;
  }

  /** No interceptor: the handler's start and the call's close. */
  @Benchmark
  public boolean bare(Handler h) {
    h.started = null;
    ServerCall.Listener<String> l = h.startCall(h.call, h.headers);
    h.started.close(Status.OK, TRAILERS);
    return l != null;
  }

  /** Sluice's interceptor, a concurrency rule: a permit for the call's life. */
  @Benchmark
  public boolean sluiceConcurrency(Handler h) {
    return through(concurrency, h);
  }

  /** Sluice's interceptor, a rate rule: one unit of an in-memory bucket. */
  @Benchmark
  public boolean sluiceRate(Handler h) {
    return through(rate, h);
  }

  /** Netflix's own ConcurrencyLimitServerInterceptor over its SimpleLimiter (fixed limit). */
  @Benchmark
  public boolean netflixInterceptor(Handler h) {
    return through(netflixOwn, h);
  }

  /** Netflix's SimpleLimiter (fixed limit) in an interceptor of its gRPC interceptor's shape. */
  @Benchmark
  public boolean netflixShaped(Handler h) {
    return through(netflix, h);
  }
}

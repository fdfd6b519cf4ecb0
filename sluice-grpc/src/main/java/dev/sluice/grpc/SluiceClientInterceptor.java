package dev.sluice.grpc;

import dev.sluice.concurrency.AdaptiveThrottle;
import dev.sluice.concurrency.RetryBudget;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;

/**
 * The client side of overload (docs/grpc.md): client-side adaptive throttling ({@link
 * AdaptiveThrottle}: calls the backend keeps refusing are refused here, unsent) and retries of
 * unary calls within a {@link RetryBudget} (at most a share of the calls that succeed, so that a
 * struggling backend is not met with a retry storm):
 *
 * <pre>{@code
 * Channel channel = ClientInterceptors.intercept(managedChannel, SluiceClientInterceptor.builder()
 *     .throttle(AdaptiveThrottle.builder().build())
 *     .retryBudget(RetryBudget.builder().ratio(0.1).minPerSecond(10).build())
 *     .maxAttempts(3)
 *     .build());
 * }</pre>
 *
 * <ul>
 *   <li>Every attempt asks the throttle first; one it refuses fails with {@code UNAVAILABLE}
 *       ("refused locally"), never sent. An attempt the backend answers with anything but
 *       {@code RESOURCE_EXHAUSTED} or {@code UNAVAILABLE} counts as accepted.
 *   <li>A unary call that fails with a retryable code ({@code UNAVAILABLE} by default) is tried
 *       again, up to {@code maxAttempts} in all, after an exponential backoff with jitter, or
 *       after the server's {@code grpc-retry-pushback-ms} when it sends one (a negative one means
 *       do not retry); never past the call's deadline, and only while the budget allows. Every
 *       success, first try or retry, feeds the budget.
 *   <li>Streaming calls are throttled but not retried (their messages are not kept).
 * </ul>
 *
 * <p>Turn grpc-java's own retries off on the channel ({@code disableRetry()}) when this
 * interceptor retries: grpc-java's retry policy cannot consult a budget, and both retrying would
 * multiply attempts. grpc-java's {@code retryThrottling} is the service config's own, coarser
 * form of the same idea.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/grpc.md#the-client-interceptor">docs/grpc.md, "The client interceptor"</a>.
 */
public final class SluiceClientInterceptor implements ClientInterceptor {
  private static final ScheduledExecutorService SCHEDULER =
      Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-grpc-retry");
        t.setDaemon(true);
        return t;
      });

  private final AdaptiveThrottle throttle;
  private final RetryBudget budget;
  private final int maxAttempts;
  private final Set<Status.Code> retryOn;
  private final long initialBackoffNanos;
  private final long maxBackoffNanos;
  private final DoubleSupplier random;
  private final ScheduledExecutorService scheduler;
  /** With grpc-java's own retries: the budget's veto on each attempt; null otherwise. */
  private final ClientStreamTracer.Factory vetoes;

  private SluiceClientInterceptor(Builder b) {
    this.throttle = b.throttle;
    this.budget = b.budget;
    this.maxAttempts = b.budget == null ? 1 : b.maxAttempts;
    this.retryOn = Set.copyOf(b.retryOn);
    this.initialBackoffNanos = b.initialBackoff.toNanos();
    this.maxBackoffNanos = b.maxBackoff.toNanos();
    this.random = b.random;
    this.scheduler = b.scheduler;
    this.vetoes = b.grpcRetries && b.budget != null ? new Vetoes() : null;
  }

  /** Settings: no throttle, no budget (no retries), 3 attempts, retry on UNAVAILABLE. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions options, Channel next) {
    if (vetoes != null) {   // grpc-java retries: each attempt's end passes the budget
      options = options.withStreamTracerFactory(vetoes);
    } else if (method.getType() == MethodDescriptor.MethodType.UNARY && maxAttempts > 1) {
      return new Retrying<>(method, options, next);
    }
    if (throttle == null) {
      return next.newCall(method, options);
    }
    return new Throttled<>(next.newCall(method, options));
  }

  /**
   * The budget in front of grpc-java's own retries: each attempt's tracer records a success, and
   * when an attempt fails with a code worth retrying, asks the budget; a refusal puts {@code
   * grpc-retry-pushback-ms: -1} in the attempt's trailers, which grpc-java reads before it
   * decides, and then does not retry.
   */
  private final class Vetoes extends ClientStreamTracer.Factory {
    @Override
    public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info,
        Metadata headers) {
      int attempt = info.getPreviousAttempts() + 1;
      return new ClientStreamTracer() {
        private Metadata trailers;

        @Override
        public void inboundTrailers(Metadata t) {
          trailers = t;
        }

        @Override
        public void streamClosed(Status status) {
          if (status.isOk()) {
            budget.success();
            return;
          }
          if (trailers == null || attempt >= maxAttempts
              || !retryOn.contains(status.getCode())) {
            return;   // no retry is coming (or none the budget can stop)
          }
          String pushback = trailers.get(SluiceServerInterceptor.RETRY_PUSHBACK);
          if (pushback != null && pushback.trim().startsWith("-")) {
            return;   // the server said not to retry already
          }
          if (!budget.tryRetry()) {
            trailers.removeAll(SluiceServerInterceptor.RETRY_PUSHBACK);
            trailers.put(SluiceServerInterceptor.RETRY_PUSHBACK, "-1");
          }
        }
      };
    }
  }

  /** Whether the backend took the call (as opposed to refusing it for load). */
  private static boolean accepted(Status.Code code) {
    return code != Status.Code.RESOURCE_EXHAUSTED && code != Status.Code.UNAVAILABLE;
  }

  private static Status refusedLocally() {
    return Status.UNAVAILABLE.withDescription("refused locally by the adaptive throttle: the"
        + " backend refuses most calls");
  }

  /** A streaming call: throttled, not retried. */
  private final class Throttled<ReqT, RespT>
      extends ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT> {
    private boolean refused;

    Throttled(ClientCall<ReqT, RespT> call) {
      super(call);
    }

    @Override
    public void start(Listener<RespT> listener, Metadata headers) {
      if (!throttle.tryRequest()) {
        refused = true;
        listener.onClose(refusedLocally(), new Metadata());
        return;
      }
      super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(
          listener) {
        @Override
        public void onClose(Status status, Metadata trailers) {
          if (accepted(status.getCode())) {
            throttle.accepted();
          }
          super.onClose(status, trailers);
        }
      }, headers);
    }

    @Override
    public void request(int n) {
      if (!refused) {
        super.request(n);
      }
    }

    @Override
    public void sendMessage(ReqT message) {
      if (!refused) {
        super.sendMessage(message);
      }
    }

    @Override
    public void halfClose() {
      if (!refused) {
        super.halfClose();
      }
    }

    @Override
    public void cancel(String message, Throwable cause) {
      if (!refused) {
        super.cancel(message, cause);
      }
    }
  }

  /**
   * A unary call tried up to {@code maxAttempts} times: each attempt's answer is kept until it is
   * known to be the last, and only the last reaches the caller.
   */
  private final class Retrying<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final MethodDescriptor<ReqT, RespT> method;
    private final CallOptions options;
    private final Channel next;
    private Listener<RespT> listener;
    private Metadata headers;
    private ReqT message;
    private int attempts;
    private volatile boolean cancelled;
    private volatile ClientCall<ReqT, RespT> current;

    Retrying(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      this.method = method;
      this.options = options;
      this.next = next;
    }

    @Override
    public void start(Listener<RespT> listener, Metadata headers) {
      this.listener = listener;
      this.headers = headers;
    }

    @Override
    public void request(int n) {
      // every attempt asks for its one answer itself
    }

    @Override
    public void sendMessage(ReqT message) {
      this.message = message;
    }

    @Override
    public void halfClose() {
      attempt();
    }

    @Override
    public void cancel(String why, Throwable cause) {
      cancelled = true;
      ClientCall<ReqT, RespT> c = current;
      if (c != null) {
        c.cancel(why, cause);
      } else {
        listener.onClose(Status.CANCELLED.withDescription(why).withCause(cause), new Metadata());
      }
    }

    @Override
    public boolean isReady() {
      return true;
    }

    private void attempt() {
      if (cancelled) {
        return;
      }
      attempts++;
      if (throttle != null && !throttle.tryRequest()) {
        listener.onClose(refusedLocally(), new Metadata());
        return;
      }
      Metadata sent = new Metadata();
      sent.merge(headers);
      ClientCall<ReqT, RespT> call = next.newCall(method, options);
      current = call;
      List<RespT> messages = new ArrayList<>(1);
      Metadata[] received = new Metadata[1];
      call.start(new Listener<>() {
        @Override
        public void onHeaders(Metadata h) {
          received[0] = h;
        }

        @Override
        public void onMessage(RespT m) {
          messages.add(m);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          closed(status, trailers, received[0], messages);
        }
      }, sent);
      call.request(2);
      call.sendMessage(message);
      call.halfClose();
    }

    private void closed(Status status, Metadata trailers, Metadata received,
        List<RespT> messages) {
      if (throttle != null && accepted(status.getCode())) {
        throttle.accepted();
      }
      if (status.isOk()) {
        budget.success();
      } else {
        long delay = delayNanos(status, trailers);
        if (delay >= 0 && budget.tryRetry()) {
          // FutureReturnValueIgnored: the retry reports its own outcome to the listener
          var unused = scheduler.schedule(this::attempt, delay, TimeUnit.NANOSECONDS);
          return;
        }
      }
      if (received != null) {
        listener.onHeaders(received);
      }
      for (RespT m : messages) {
        listener.onMessage(m);
      }
      listener.onClose(status, trailers);
    }

    /** How long before the next attempt, or -1 when there is none to make (budget aside). */
    private long delayNanos(Status status, Metadata trailers) {
      if (cancelled || attempts >= maxAttempts || !retryOn.contains(status.getCode())) {
        return -1;
      }
      String pushback = trailers.get(SluiceServerInterceptor.RETRY_PUSHBACK);
      long delay;
      if (pushback != null) {
        try {
          long ms = Long.parseLong(pushback.trim());
          if (ms < 0) {
            return -1;   // the server asks not to retry
          }
          delay = TimeUnit.MILLISECONDS.toNanos(ms);
        } catch (NumberFormatException e) {
          return -1;
        }
      } else {
        delay = backoffNanos();
      }
      Deadline deadline = options.getDeadline();
      if (deadline != null && deadline.timeRemaining(TimeUnit.NANOSECONDS) <= delay) {
        return -1;   // it would not be answered in time
      }
      return delay;
    }

    private long backoffNanos() {
      double ceiling = Math.min(maxBackoffNanos,
          initialBackoffNanos * Math.pow(2, Math.max(0, attempts - 1)));
      return (long) (ceiling * random.getAsDouble());
    }
  }

  /** Settings of a {@link SluiceClientInterceptor}; every setter names a bad value. */
  public static final class Builder {
    private AdaptiveThrottle throttle;
    private RetryBudget budget;
    private int maxAttempts = 3;
    private Set<Status.Code> retryOn = EnumSet.of(Status.Code.UNAVAILABLE);
    private Duration initialBackoff = Duration.ofMillis(100);
    private Duration maxBackoff = Duration.ofSeconds(1);
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private ScheduledExecutorService scheduler = SCHEDULER;
    private boolean grpcRetries;

    Builder() {}

    /**
     * Let grpc-java's own retry policy (the channel's service config) retry, within the budget,
     * instead of this interceptor: each failed attempt asks the budget, and a refusal tells
     * grpc-java not to retry (a {@code grpc-retry-pushback-ms} of -1 in the attempt's trailers).
     * Give {@link #maxAttempts} and {@link #retryOn} the policy's values. An attempt that fails
     * without trailers (a broken connection) is retried by grpc-java without asking.
     */
    public Builder grpcRetries() {
      this.grpcRetries = true;
      return this;
    }

    /** Client-side adaptive throttling of every call (default none). */
    public Builder throttle(AdaptiveThrottle throttle) {
      this.throttle = Objects.requireNonNull(throttle, "throttle");
      return this;
    }

    /** Retries of unary calls within this budget (default none: no retries). */
    public Builder retryBudget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget");
      return this;
    }

    /** Attempts of a unary call in all, the first one included (default 3; 1 to 10). */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1 || attempts > 10) {
        throw new IllegalArgumentException("maxAttempts must be between 1 and 10 but was "
            + attempts);
      }
      this.maxAttempts = attempts;
      return this;
    }

    /** The status codes worth retrying (default UNAVAILABLE); never OK. */
    public Builder retryOn(Status.Code... codes) {
      EnumSet<Status.Code> set = EnumSet.noneOf(Status.Code.class);
      for (Status.Code c : codes) {
        if (c == Status.Code.OK) {
          throw new IllegalArgumentException("OK is not a failure to retry");
        }
        set.add(Objects.requireNonNull(c, "code"));
      }
      if (set.isEmpty()) {
        throw new IllegalArgumentException("retryOn needs at least one status code");
      }
      this.retryOn = set;
      return this;
    }

    /**
     * The backoff between attempts without a server pushback: up to {@code initial}, doubling
     * each attempt up to {@code max}, each a uniform random share of that (full jitter).
     */
    public Builder backoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
      if (initial.isNegative() || max.compareTo(initial) < 0
          || max.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("backoff must be 0 <= initial <= max <= 10 minutes"
            + " but was " + initial + " and " + max);
      }
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /** Uniform numbers in [0, 1) for the backoff's jitter (tests). */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /** Where retries wait (default a shared daemon thread). */
    public Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** The interceptor. */
    public SluiceClientInterceptor build() {
      if (grpcRetries && budget == null) {
        throw new IllegalStateException("grpcRetries() needs a retryBudget(...) to stop them");
      }
      return new SluiceClientInterceptor(this);
    }
  }
}

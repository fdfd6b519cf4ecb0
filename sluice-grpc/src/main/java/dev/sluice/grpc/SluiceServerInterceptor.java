package dev.sluice.grpc;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.Refusal;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Rate and concurrency limits for a grpc-java server (docs/grpc.md):
 *
 * <pre>{@code
 * Server server = ServerBuilder.forPort(8443)
 *     .addService(ServerInterceptors.intercept(orders, SluiceServerInterceptor.builder()
 *         .rate("api", apiLimiter, GrpcKey.metadata("x-api-key"))
 *         .concurrency("db", dbLimiter, GrpcKey.method())
 *         .maxWait(Duration.ofMillis(200))
 *         .build()))
 *     .build();
 * }</pre>
 *
 * <ul>
 *   <li>Each rate rule takes one unit from its limiter for the call's key; a refusal closes the
 *       call with {@code RESOURCE_EXHAUSTED}, a status message naming the limit, and {@code
 *       grpc-retry-pushback-ms} (when to try again); a store the limiter cannot reach, failing
 *       closed, is {@code UNAVAILABLE}.
 *   <li>Each concurrency rule holds a permit for the call's life, streaming calls included: it
 *       is released exactly once when the call closes, is cancelled or fails. A call that finds
 *       no permit free waits (without a thread) up to {@link Builder#maxWait}, and never past
 *       what is useful before the call's own deadline (the one gRPC propagates), then is refused
 *       as above. Its priority is read from metadata ({@code x-priority}: critical, normal,
 *       sheddable).
 *   <li>Adaptive limits learn from each call's end: {@code OK} is a success with its latency;
 *       {@code CANCELLED}, {@code DEADLINE_EXCEEDED}, {@code RESOURCE_EXHAUSTED} and
 *       {@code UNAVAILABLE} are drops; other statuses say nothing of the backend (ignored).
 * </ul>
 *
 * <p>A rule whose key is null for a call (a missing metadata value) does not apply to it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/grpc.md#the-server-interceptor">docs/grpc.md, "The server interceptor"</a>.
 */
public final class SluiceServerInterceptor implements ServerInterceptor {
  /** {@code grpc-retry-pushback-ms}: how long the client should wait before it tries again. */
  public static final Metadata.Key<String> RETRY_PUSHBACK =
      Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

  private record RateRule(String name, String methods, RateLimiter limiter, GrpcKey key) {}

  /** A concurrency rule; {@code handles} is false once its limiter turned out to have none. */
  private static final class ConcurrencyRule {
    final String name;
    final String methods;
    final ConcurrencyLimiter limiter;
    final GrpcKey key;
    volatile boolean handles = true;

    ConcurrencyRule(String name, String methods, ConcurrencyLimiter limiter, GrpcKey key) {
      this.name = name;
      this.methods = methods;
      this.limiter = limiter;
      this.key = key;
    }
  }

  private final List<RateRule> rates;
  private final List<ConcurrencyRule> concurrency;
  private final Metadata.Key<String> priority;
  private final long maxWaitNanos;
  private final long concurrencyPushbackMillis;
  private final Executor executor;

  private SluiceServerInterceptor(Builder b) {
    this.rates = List.copyOf(b.rates);
    this.concurrency = List.copyOf(b.concurrency);
    this.priority = Metadata.Key.of(b.priorityKey, Metadata.ASCII_STRING_MARSHALLER);
    this.maxWaitNanos = b.maxWait.toNanos();
    this.concurrencyPushbackMillis = b.concurrencyPushback.toMillis();
    this.executor = b.executor;
  }

  /** Rules are added in the order they are decided; rate rules before concurrency rules. */
  public static Builder builder() {
    return new Builder();
  }

  // FutureReturnValueIgnored: the completion handler consumes the answer and its failure
  @Override
  @SuppressWarnings("FutureReturnValueIgnored")
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
      Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    String method = call.getMethodDescriptor().getFullMethodName();
    for (RateRule r : rates) {
      if (!matches(r.methods, method)) {
        continue;
      }
      String key = r.key.key(call, headers);
      if (key == null) {
        continue;
      }
      Decision d = r.limiter.tryAcquire(key);
      if (!d.isAllowed()) {
        if (d.isUnavailable()) {
          return refuse(call, Status.UNAVAILABLE.withDescription("rate limit '" + r.name
              + "' cannot be decided: its store is unavailable"), 1000);
        }
        long ms = Math.max(1, TimeUnit.NANOSECONDS.toMillis(d.retryAfterNanos()));
        return refuse(call, Status.RESOURCE_EXHAUSTED.withDescription("rate limit '" + r.name
            + "' exceeded; retry in " + ms + " ms"), ms);
      }
    }
    Priority p = priority(headers.get(priority));
    if (maxWaitNanos == 0 && concurrency.size() == 1 && p == Priority.NORMAL) {
      // the common case, allocation-light: one rule, no waiting, a permit named by a number
      // where the limiter has them (in memory), released through the limiter, which ends it
      // exactly once
      ConcurrencyRule r = concurrency.get(0);
      if (!matches(r.methods, method)) {
        return next.startCall(call, headers);
      }
      String key = r.key.key(call, headers);
      if (key == null) {
        return next.startCall(call, headers);
      }
      if (r.handles) {
        long handle;
        try {
          handle = r.limiter.tryAcquireHandle(key);
        } catch (UnsupportedOperationException e) {
          r.handles = false;
          handle = ConcurrencyLimiter.NO_PERMIT;
        }
        if (handle != ConcurrencyLimiter.NO_PERMIT) {
          HandleCall<ReqT, RespT> c = new HandleCall<>(call, r.limiter, key, handle);
          return new HandleListener<>(next.startCall(c, headers), c);
        }
        if (r.handles) {   // refused, and counted once by the limiter: no second try
          String why = r.limiter.inFlight(key) >= r.limiter.limit(key) ? "full" : "refused";
          return refuse(call, Status.RESOURCE_EXHAUSTED.withDescription("concurrency limit '"
              + r.name + "' refused the call (" + why + ")"), concurrencyPushbackMillis);
        }
      }
    }
    List<Held> needed = new ArrayList<>(concurrency.size());
    for (ConcurrencyRule r : concurrency) {
      if (matches(r.methods, method)) {
        String key = r.key.key(call, headers);
        if (key != null) {
          needed.add(new Held(r, key));
        }
      }
    }
    if (needed.isEmpty()) {
      return next.startCall(call, headers);
    }
    Deadline deadline = Context.current().getDeadline();
    Calls<ReqT, RespT> held = new Calls<>(call, needed);
    // one acquisition per rule (each counted once by its limiter); answered at once where every
    // permit is free or none may wait: then no buffering, no hop to another thread
    CompletableFuture<Refused> acquired = acquireRest(held, p, deadline);
    if (acquired.isDone() && !acquired.isCompletedExceptionally()) {
      Refused refused = acquired.join();
      if (refused == null) {
        return new Releasing<>(next.startCall(held, headers), held);
      }
      held.releaseAll(Outcome.IGNORED);
      return refuse(call, refusal(refused), concurrencyPushbackMillis);
    }
    Pending<ReqT> pending = new Pending<>();
    Context context = Context.current();
    acquired.whenCompleteAsync((refused, failure) -> {
      if (failure != null || refused != null) {
        held.releaseAll(Outcome.IGNORED);
        if (!pending.cancelled) {
          Status s = failure != null ? Status.INTERNAL.withDescription("the concurrency limit"
              + " failed: " + failure) : refusal(refused);
          context.run(() -> close(call, s, failure != null ? 0 : concurrencyPushbackMillis));
        }
        return;
      }
      if (pending.cancelled) {   // the client went away while it waited
        held.releaseAll(Outcome.IGNORED);
        return;
      }
      context.run(() -> pending.start(new Releasing<>(next.startCall(held, headers), held)));
    }, executor);
    return pending;
  }

  /** A refusal of a concurrency rule, or a store failure. */
  private record Refused(ConcurrencyRule rule, Refusal why) {}

  /** Acquires the permits not yet held, one after another; null when all are held. */
  private CompletableFuture<Refused> acquireRest(Calls<?, ?> held, Priority p, Deadline deadline) {
    CompletableFuture<Refused> chain = CompletableFuture.completedFuture(null);
    for (Held h : held.held) {
      if (h.holds()) {
        continue;
      }
      chain = chain.thenCompose(refused -> {
        if (refused != null) {
          return CompletableFuture.completedFuture(refused);
        }
        long wait = maxWaitNanos;
        if (deadline != null) {
          long left = deadline.timeRemaining(TimeUnit.NANOSECONDS);
          wait = Math.min(wait, h.rule.limiter.usefulWait(h.key, Duration.ofNanos(Math.max(0,
              left))).toNanos());
        }
        if (wait <= 0) {
          Acquisition a = h.rule.limiter.tryAcquire(h.key, 1, p);
          return CompletableFuture.completedFuture(held(h, a));
        }
        return h.rule.limiter.acquireAsync(h.key, 1, p, Duration.ofNanos(wait))
            .thenApply(a -> held(h, a));
      });
    }
    return chain;
  }

  private static Refused held(Held h, Acquisition a) {
    if (a.isAcquired()) {
      h.hold(a.permit());   // false: the call ended meanwhile, and the permit went back
      return null;
    }
    return new Refused(h.rule, a.refusal());
  }

  private static Status refusal(Refused r) {
    boolean store = r.why == Refusal.STORE_UNAVAILABLE || r.why == Refusal.CLOSED;
    return (store ? Status.UNAVAILABLE : Status.RESOURCE_EXHAUSTED).withDescription(
        "concurrency limit '" + r.rule.name + "' refused the call ("
            + r.why.name().toLowerCase(Locale.ROOT) + ")");
  }

  private static <ReqT> ServerCall.Listener<ReqT> refuse(ServerCall<ReqT, ?> call, Status status,
      long pushbackMillis) {
    close(call, status, pushbackMillis);
    return new ServerCall.Listener<>() { };
  }

  private static void close(ServerCall<?, ?> call, Status status, long pushbackMillis) {
    Metadata trailers = new Metadata();
    if (pushbackMillis > 0) {
      trailers.put(RETRY_PUSHBACK, Long.toString(pushbackMillis));
    }
    call.close(status, trailers);
  }

  private static boolean matches(String pattern, String method) {
    if (pattern == null) {
      return true;
    }
    return pattern.endsWith("/*") ? method.startsWith(pattern.substring(0, pattern.length() - 1))
        : method.equals(pattern);
  }

  private static Priority priority(String value) {
    if (value == null) {
      return Priority.NORMAL;
    }
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "critical" -> Priority.CRITICAL;
      case "sheddable" -> Priority.SHEDDABLE;
      default -> Priority.NORMAL;
    };
  }

  /** How a call ended, to an adaptive limit. */
  static Outcome outcome(Status.Code code) {
    return switch (code) {
      case OK -> Outcome.SUCCESS;
      case CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE -> Outcome.DROPPED;
      default -> Outcome.IGNORED;
    };
  }

  /** A permit a call needs: held once acquired, released once, whoever ends the call first. */
  private static final class Held {
    final ConcurrencyRule rule;
    final String key;
    private Permit permit;
    private boolean released;

    Held(ConcurrencyRule rule, String key) {
      this.rule = rule;
      this.key = key;
    }

    /** Holds {@code p}; false (and {@code p} given back) when the call has already ended. */
    synchronized boolean hold(Permit p) {
      if (released) {
        p.release(Outcome.IGNORED);
        return false;
      }
      permit = p;
      return true;
    }

    synchronized boolean holds() {
      return permit != null;
    }

    /** Releases the permit, if held, exactly once. */
    void release(Outcome outcome) {
      Permit p;
      synchronized (this) {
        released = true;
        p = permit;
        permit = null;
      }
      if (p != null) {
        p.release(outcome);
      }
    }
  }

  /** The call, which releases its permits when it closes, with what its status says. */
  private static final class Calls<ReqT, RespT>
      extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {
    final List<Held> held;

    Calls(ServerCall<ReqT, RespT> call, List<Held> held) {
      super(call);
      this.held = held;
    }

    void releaseAll(Outcome outcome) {
      for (Held h : held) {
        h.release(outcome);
      }
    }

    @Override
    public void close(Status status, Metadata trailers) {
      try {
        super.close(status, trailers);
      } finally {
        releaseAll(outcome(status.getCode()));
      }
    }
  }

  /** A call holding a handle permit, released through its limiter (once, whoever is first). */
  private static final class HandleCall<ReqT, RespT>
      extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {
    private final ConcurrencyLimiter limiter;
    private final String key;
    private final long handle;

    HandleCall(ServerCall<ReqT, RespT> call, ConcurrencyLimiter limiter, String key,
        long handle) {
      super(call);
      this.limiter = limiter;
      this.key = key;
      this.handle = handle;
    }

    void release(Outcome outcome) {
      limiter.release(key, handle, outcome);
    }

    @Override
    public void close(Status status, Metadata trailers) {
      try {
        super.close(status, trailers);
      } finally {
        release(outcome(status.getCode()));
      }
    }
  }

  /** The listener of a call holding a handle permit: a cancelled call releases it. */
  private static final class HandleListener<ReqT>
      extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {
    private final HandleCall<ReqT, ?> call;

    HandleListener(ServerCall.Listener<ReqT> delegate, HandleCall<ReqT, ?> call) {
      super(delegate);
      this.call = call;
    }

    @Override
    public void onCancel() {
      call.release(Outcome.DROPPED);
      super.onCancel();
    }
  }

  /** The started call's listener: a cancelled call (never closed) releases its permits. */
  private static final class Releasing<ReqT>
      extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {
    private final Calls<ReqT, ?> call;

    Releasing(ServerCall.Listener<ReqT> delegate, Calls<ReqT, ?> call) {
      super(delegate);
      this.call = call;
    }

    @Override
    public void onCancel() {
      call.releaseAll(Outcome.DROPPED);
      super.onCancel();
    }

    @Override
    public void onComplete() {
      call.releaseAll(Outcome.SUCCESS);   // closed already: nothing is left to release
      super.onComplete();
    }
  }

  /**
   * The listener of a call that waits for its permits: it keeps the call's events, in order,
   * until the call is started, then passes them on.
   */
  private static final class Pending<ReqT> extends ServerCall.Listener<ReqT> {
    private final ArrayDeque<Runnable> queued = new ArrayDeque<>();
    private ServerCall.Listener<ReqT> delegate;
    private boolean passThrough;
    volatile boolean cancelled;

    void start(ServerCall.Listener<ReqT> listener) {
      synchronized (this) {
        delegate = listener;
      }
      while (true) {
        List<Runnable> batch;
        synchronized (this) {
          if (queued.isEmpty()) {
            passThrough = true;
            return;
          }
          batch = new ArrayList<>(queued);
          queued.clear();
        }
        batch.forEach(Runnable::run);
      }
    }

    private void on(Consumer<ServerCall.Listener<ReqT>> event) {
      synchronized (this) {
        if (!passThrough) {
          queued.add(() -> event.accept(delegate));
          return;
        }
      }
      event.accept(delegate);
    }

    @Override
    public void onMessage(ReqT message) {
      on(l -> l.onMessage(message));
    }

    @Override
    public void onHalfClose() {
      on(ServerCall.Listener::onHalfClose);
    }

    @Override
    public void onCancel() {
      cancelled = true;
      on(ServerCall.Listener::onCancel);
    }

    @Override
    public void onComplete() {
      on(ServerCall.Listener::onComplete);
    }

    @Override
    public void onReady() {
      on(ServerCall.Listener::onReady);
    }
  }

  /** Settings of a {@link SluiceServerInterceptor}; every setter names a bad value. */
  public static final class Builder {
    private final List<RateRule> rates = new ArrayList<>();
    private final List<ConcurrencyRule> concurrency = new ArrayList<>();
    private String priorityKey = "x-priority";
    private Duration maxWait = Duration.ZERO;
    private Duration concurrencyPushback = Duration.ofSeconds(1);
    private Executor executor = ForkJoinPool.commonPool();

    Builder() {}

    /** A rate rule for every method: one unit of {@code limiter} per call, by {@code key}. */
    public Builder rate(String name, RateLimiter limiter, GrpcKey key) {
      return rate(name, null, limiter, key);
    }

    /**
     * A rate rule for the methods {@code methods} names: a full method name ({@code
     * shop.Orders/Place}) or a service's methods ({@code shop.Orders/*}).
     */
    public Builder rate(String name, String methods, RateLimiter limiter, GrpcKey key) {
      rates.add(new RateRule(name(name), methods(methods), Objects.requireNonNull(limiter,
          "limiter"), Objects.requireNonNull(key, "key")));
      return this;
    }

    /** A concurrency rule for every method: a permit of {@code limiter} for each call's life. */
    public Builder concurrency(String name, ConcurrencyLimiter limiter, GrpcKey key) {
      return concurrency(name, null, limiter, key);
    }

    /** A concurrency rule for the methods {@code methods} names (as {@link #rate}'s). */
    public Builder concurrency(String name, String methods, ConcurrencyLimiter limiter,
        GrpcKey key) {
      concurrency.add(new ConcurrencyRule(name(name), methods(methods),
          Objects.requireNonNull(limiter, "limiter"), Objects.requireNonNull(key, "key")));
      return this;
    }

    /** The metadata key of a call's priority (default {@code x-priority}). */
    public Builder priorityHeader(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isBlank() || name.toLowerCase(Locale.ROOT).endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        throw new IllegalArgumentException("the priority's metadata must be an ASCII key (not"
            + " -bin) but was '" + name + "'");
      }
      this.priorityKey = name.toLowerCase(Locale.ROOT);
      return this;
    }

    /**
     * How long a call may wait for a permit (default 0: refused at once), never past what is
     * useful before its deadline.
     */
    public Builder maxWait(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("maxWait must be between 0 and 10 minutes but was "
            + wait);
      }
      this.maxWait = wait;
      return this;
    }

    /** The pushback a concurrency refusal sends (default 1 s; 1 ms to 1 hour). */
    public Builder concurrencyPushback(Duration pushback) {
      Objects.requireNonNull(pushback, "pushback");
      if (pushback.compareTo(Duration.ofMillis(1)) < 0
          || pushback.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("concurrencyPushback must be between 1 ms and 1 hour"
            + " but was " + pushback);
      }
      this.concurrencyPushback = pushback;
      return this;
    }

    /** Where a call that waited is started (default the common fork-join pool). */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /** The interceptor. */
    public SluiceServerInterceptor build() {
      if (rates.isEmpty() && concurrency.isEmpty()) {
        throw new IllegalStateException("the interceptor has no rule: add rate(...) or"
            + " concurrency(...)");
      }
      return new SluiceServerInterceptor(this);
    }

    private static String name(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("a rule's name must not be blank");
      }
      return name;
    }

    private static String methods(String methods) {
      if (methods == null) {
        return null;
      }
      int slash = methods.indexOf('/');
      if (slash <= 0 || slash == methods.length() - 1 || (methods.indexOf('*') >= 0
          && !methods.endsWith("/*"))) {
        throw new IllegalArgumentException("methods must be a full method name"
            + " (package.Service/Method) or a service's methods (package.Service/*) but was '"
            + methods + "'");
      }
      return methods;
    }
  }
}

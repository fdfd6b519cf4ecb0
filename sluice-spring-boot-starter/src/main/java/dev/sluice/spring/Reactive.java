package dev.sluice.spring;

import dev.sluice.RateLimiter;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import org.aopalliance.intercept.MethodInvocation;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** {@link RateLimited} methods returning {@code Mono} or {@code Flux}: decided without blocking. */
final class Reactive {
  private Reactive() {}

  /** Whether this thread is one that must never block (a Netty event loop, a parallel worker). */
  static boolean onNonBlockingThread() {
    return Schedulers.isInNonBlockingThread();
  }

  static boolean handles(Class<?> returns) {
    return Mono.class.isAssignableFrom(returns) || Flux.class.isAssignableFrom(returns);
  }

  static Object limit(Class<?> returns, RateLimiter limiter, RateLimitedInterceptor.Target t,
      String key, double cost, MethodInvocation invocation, RateLimitedInterceptor interceptor) {
    Mono<Boolean> admitted = Mono.defer(() ->
        Mono.fromFuture(RateLimitedInterceptor.decide(limiter, t, key, cost))).flatMap(d ->
            interceptor.admits(d, t, key) ? Mono.just(true)
                : Mono.error(new RateLimitExceededException(t.policy(), key, cost, d)));
    if (Mono.class.isAssignableFrom(returns)) {
      return admitted.flatMap(ok -> Reactive.<Mono<Object>>proceed(invocation, Mono.class));
    }
    return admitted.flatMapMany(ok -> Reactive.<Flux<Object>>proceed(invocation, Flux.class));
  }

  // TypeParameterUnusedInFormals: the caller names the publisher it expects (Mono or Flux), which proceed() returns for the methods wrapped
  @SuppressWarnings({"unchecked", "TypeParameterUnusedInFormals"})
  private static <P> P proceed(MethodInvocation invocation, Class<?> type) {
    try {
      return (P) invocation.proceed();
    } catch (Throwable e) {
      return (P) (type == Mono.class ? Mono.error(e) : Flux.error(e));
    }
  }

  /**
   * A {@link ConcurrencyLimited} method's publisher: a permit is acquired without blocking when
   * it is subscribed to, and held until the publisher ends (an error: {@code DROPPED}; a
   * cancellation: {@code IGNORED}). The release comes before the end is passed on (a
   * {@code Mono}'s value, a {@code Flux}'s completion or error), as a blocking method's comes
   * before it returns: a caller that calls again once it has the answer finds the permit back.
   */
  static Object holding(Class<?> returns, ConcurrencyLimiter limiter,
      ConcurrencyLimitedInterceptor.Target t, String key, MethodInvocation invocation) {
    Mono<Permit> permit = Mono.defer(() ->
        Mono.fromFuture(ConcurrencyLimitedInterceptor.acquireAsync(limiter, t, key))).flatMap(a ->
            a.isAcquired() ? Mono.just(a.permit())
                : Mono.error(ConcurrencyLimitedInterceptor.refused(t, key, a)));
    if (Mono.class.isAssignableFrom(returns)) {
      return Mono.usingWhen(permit, p -> Reactive.<Mono<Object>>proceed(invocation, Mono.class),
          p -> released(p, Outcome.SUCCESS), (p, e) -> released(p, Outcome.DROPPED),
          p -> released(p, Outcome.IGNORED));
    }
    return Flux.usingWhen(permit, p -> Reactive.<Flux<Object>>proceed(invocation, Flux.class),
        p -> released(p, Outcome.SUCCESS), (p, e) -> released(p, Outcome.DROPPED),
        p -> released(p, Outcome.IGNORED));
  }

  /**
   * Ends {@code permit} without blocking; completes once a shared store has answered (a store's
   * failure does not fail it: the permit then comes back when its lease ends).
   */
  private static Mono<Boolean> released(Permit permit, Outcome outcome) {
    return Mono.fromFuture(() -> permit.releaseAsync(outcome)).onErrorComplete();
  }
}

package dev.sluice.spring;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import dev.sluice.concurrency.Priority;
import dev.sluice.http.ConcurrencyScope;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.expression.Expression;

/** Holds each call of a {@link ConcurrencyLimited} method to a permit while it runs. */
final class ConcurrencyLimitedInterceptor
    extends LimitedMethodInterceptor<ConcurrencyLimited, ConcurrencyLimitedInterceptor.Target> {
  /** A method's annotation, parsed once. */
  record Target(String limit, Expression key, String fixedKey, Priority priority,
      Duration maxWait, String where) {
    ConcurrencyScope scope() {
      return key == null ? ConcurrencyScope.ROUTE : ConcurrencyScope.CLIENT;
    }
  }

  ConcurrencyLimitedInterceptor(Supplier<SluiceLimiters> limiters) {
    super(ConcurrencyLimited.class, limiters);
  }

  @Override
  Target parse(Method method, ConcurrencyLimited a, SluiceLimiters limiters) {
    return parse(method, a, limiters.allConcurrency().keySet());
  }

  /**
   * The parsed annotation of {@code method}, checked against the limits.
   *
   * @throws SluiceConfigurationException naming the method and the problem
   */
  static Target parse(Method method, ConcurrencyLimited a, Set<String> limits) {
    String where = where(ConcurrencyLimited.class, method);
    List<String> problems = new ArrayList<>();
    if (!limits.contains(a.limit())) {
      problems.add(where + ": limit: no limit '" + a.limit() + "' under"
          + " sluice.concurrency.limits (there are " + new TreeSet<>(limits) + ")");
    }
    Expression key = a.key().isBlank() ? null : expression(method, "key", a.key(), problems, where);
    Duration wait = maxWait(a.maxWait(), Duration.ofMinutes(1), problems, where);
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return new Target(a.limit(), key,
        method.getDeclaringClass().getSimpleName() + "." + method.getName(), a.priority(), wait,
        where);
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Target t = target(invocation);
    ConcurrencyLimiter limiter = limiters().concurrency(t.limit());
    String key = key(t.key(), t.fixedKey(), t.where(), context(invocation));
    Class<?> returns = method.getReturnType();
    if (REACTOR && Reactive.handles(returns)) {
      return Reactive.holding(returns, limiter, t, key, invocation);
    }
    if (CompletionStage.class.isAssignableFrom(returns)) {
      return acquireAsync(limiter, t, key).thenCompose(a -> {
        if (!a.isAcquired()) {
          return CompletableFuture.failedFuture(refused(t, key, a));
        }
        CompletionStage<?> stage;
        try {
          stage = (CompletionStage<?>) invocation.proceed();
        } catch (Throwable e) {
          a.permit().release(Outcome.DROPPED);
          return CompletableFuture.failedFuture(e);
        }
        return stage.whenComplete((v, failure) ->
            a.permit().release(failure == null ? Outcome.SUCCESS : Outcome.DROPPED));
      });
    }
    refuseToBlockAnEventLoop(t.where(), returns, t.maxWait() != null, "a permit",
        "call to the shared store");
    Acquisition a = t.maxWait() == null ? limiter.tryAcquire(key, 1, t.priority())
        : limiter.acquire(key, 1, t.priority(), t.maxWait());
    if (!a.isAcquired()) {
      throw refused(t, key, a);
    }
    Permit p = a.permit();
    boolean failed = true;
    try {
      Object result = invocation.proceed();
      failed = false;
      return result;
    } finally {
      p.release(failed ? Outcome.DROPPED : Outcome.SUCCESS);
    }
  }

  static CompletableFuture<Acquisition> acquireAsync(ConcurrencyLimiter limiter, Target t,
      String key) {
    return limiter.acquireAsync(key, 1, t.priority(),
        t.maxWait() == null ? Duration.ZERO : t.maxWait());
  }

  static ConcurrencyLimitExceededException refused(Target t, String key, Acquisition a) {
    return new ConcurrencyLimitExceededException(t.limit(), key, t.scope(), a);
  }
}

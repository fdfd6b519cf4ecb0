package dev.sluice.spring;

import dev.sluice.LimitSpec;
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
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

/** Holds each call of a {@link ConcurrencyLimited} method to a permit while it runs. */
final class ConcurrencyLimitedInterceptor implements MethodInterceptor {
  private static final SpelExpressionParser PARSER = new SpelExpressionParser();
  private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();
  private static final boolean REACTOR = ClassUtils.isPresent("reactor.core.publisher.Mono",
      ConcurrencyLimitedInterceptor.class.getClassLoader());

  /** A method's annotation, parsed once. */
  record Target(String limit, Expression key, String fixedKey, Priority priority,
      Duration maxWait, String where) {
    ConcurrencyScope scope() {
      return key == null ? ConcurrencyScope.ROUTE : ConcurrencyScope.CLIENT;
    }
  }

  private final Supplier<SluiceLimiters> lookup;
  private volatile SluiceLimiters resolved;
  private final Map<Method, Target> targets = new ConcurrentHashMap<>();

  ConcurrencyLimitedInterceptor(Supplier<SluiceLimiters> limiters) {
    this.lookup = limiters;
  }

  private SluiceLimiters limiters() {
    SluiceLimiters l = resolved;
    if (l == null) {
      resolved = l = lookup.get();
    }
    return l;
  }

  /**
   * The parsed annotation of {@code method}, checked against the limits.
   *
   * @throws SluiceConfigurationException naming the method and the problem
   */
  static Target parse(Method method, ConcurrencyLimited a, Set<String> limits) {
    String where = "@ConcurrencyLimited on " + method.getDeclaringClass().getName() + "."
        + method.getName();
    List<String> problems = new ArrayList<>();
    if (!limits.contains(a.limit())) {
      problems.add(where + ": limit: no limit '" + a.limit() + "' under"
          + " sluice.concurrency.limits (there are " + new TreeSet<>(limits) + ")");
    }
    Expression key = null;
    try {
      key = a.key().isBlank() ? null : PARSER.parseExpression(a.key());
    } catch (ExpressionException e) {
      problems.add(where + ": key: not a SpEL expression: '" + a.key() + "': " + e.getMessage());
    }
    if (key != null) {
      RateLimitedInterceptor.checkVariables(method, "key", a.key(), key, problems, where);
    }
    Duration wait = null;
    if (!a.maxWait().isBlank()) {
      wait = LimitSpec.parseDuration(a.maxWait().trim());
      if (wait == null || wait.compareTo(Duration.ofMinutes(1)) > 0) {
        problems.add(where + ": maxWait: must be a duration of at most 1m such as 250ms or 5s but"
            + " was '" + a.maxWait() + "'");
      }
    }
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
    Target t = targets.computeIfAbsent(method, m -> {
      Method specific = AopUtils.getMostSpecificMethod(m, invocation.getThis() == null
          ? m.getDeclaringClass() : invocation.getThis().getClass());
      ConcurrencyLimited a = AnnotatedElementUtils.findMergedAnnotation(specific,
          ConcurrencyLimited.class);
      return parse(specific, a, limiters().allConcurrency().keySet());
    });
    ConcurrencyLimiter limiter = limiters().concurrency(t.limit());
    String key = RateLimitedInterceptor.key(t.key(), t.fixedKey(), t.where(),
        new MethodBasedEvaluationContext(invocation.getThis(), method, invocation.getArguments(),
            NAMES));
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
    if (REACTOR && (t.maxWait() != null || limiters().store().isPresent())
        && Reactive.onNonBlockingThread()) {
      throw new IllegalStateException(t.where() + " returns " + returns.getSimpleName()
          + " and was called on the non-blocking thread " + Thread.currentThread().getName()
          + ": its " + (t.maxWait() != null ? "wait for a permit (maxWait)" : "call to the shared"
          + " store") + " would block that thread. Return Mono, Flux or CompletionStage, or call"
          + " it on a thread that may block (Schedulers.boundedElastic())");
    }
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

package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
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
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionException;

/** Decides each call of a {@link RateLimited} method before it runs. */
final class RateLimitedInterceptor
    extends LimitedMethodInterceptor<RateLimited, RateLimitedInterceptor.Target> {
  private static final System.Logger LOG = System.getLogger(RateLimitedInterceptor.class.getName());

  /** A method's annotation, parsed once. */
  record Target(String policy, Expression key, String fixedKey, Expression cost, Duration maxWait,
      String where) {}

  RateLimitedInterceptor(Supplier<SluiceLimiters> limiters) {
    super(RateLimited.class, limiters);
  }

  @Override
  Target parse(Method method, RateLimited a, SluiceLimiters limiters) {
    return parse(method, a, limiters.all().keySet());
  }

  /**
   * The parsed annotation of {@code method}, checked against the policies.
   *
   * @throws SluiceConfigurationException naming the method and the problem
   */
  static Target parse(Method method, RateLimited a, Set<String> policies) {
    String where = where(RateLimited.class, method);
    List<String> problems = new ArrayList<>();
    if (!policies.contains(a.policy())) {
      problems.add(where + ": policy: no policy '" + a.policy() + "' under sluice.policies (there"
          + " are " + new TreeSet<>(policies) + ")");
    }
    Expression key = a.key().isBlank() ? null : expression(method, "key", a.key(), problems, where);
    Expression cost = expression(method, "cost", a.cost(), problems, where);
    Duration wait = maxWait(a.maxWait(), null, problems, where);
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return new Target(a.policy(), key,
        method.getDeclaringClass().getSimpleName() + "." + method.getName(), cost, wait, where);
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Target t = target(invocation);
    RateLimiter limiter = limiters().get(t.policy());
    MethodBasedEvaluationContext context = context(invocation);
    String key = key(t, context);
    double cost = cost(t, context);
    Class<?> returns = method.getReturnType();
    if (REACTOR && Reactive.handles(returns)) {
      return Reactive.limit(returns, limiter, t, key, cost, invocation, this);
    }
    if (CompletionStage.class.isAssignableFrom(returns)) {
      return decide(limiter, t, key, cost).thenCompose(d -> {
        if (!admits(d, t, key)) {
          return CompletableFuture.failedFuture(new RateLimitExceededException(t.policy(), key, cost, d));
        }
        try {
          return (CompletionStage<?>) invocation.proceed();
        } catch (Throwable e) {
          return CompletableFuture.failedFuture(e);
        }
      });
    }
    refuseToBlockAnEventLoop(t.where(), returns, t.maxWait() != null, "room",
        "decision on the shared store");
    Decision d = t.maxWait() == null ? limiter.tryAcquire(key, cost)
        : limiter.acquire(key, cost, t.maxWait());
    if (!admits(d, t, key)) {
      throw new RateLimitExceededException(t.policy(), key, cost, d);
    }
    return invocation.proceed();
  }

  /** Whether the call goes ahead: admitted, or refused in a dry run (logged, not enforced). */
  boolean admits(Decision d, Target t, String key) {
    if (d.isAllowed()) {
      return true;
    }
    if (limiters().settings.dryRun) {
      LOG.log(System.Logger.Level.INFO, "dry run: {0} key {1} would be refused ({2})", t.where(),
          key, d);
      return true;
    }
    return false;
  }

  /** The asynchronous decision: {@code tryAcquireAsync}, or {@code acquireAsync} with a wait. */
  static CompletableFuture<Decision> decide(RateLimiter limiter, Target t, String key, double cost) {
    return t.maxWait() == null ? limiter.tryAcquireAsync(key, cost)
        : limiter.acquireAsync(key, cost, t.maxWait());
  }

  private static String key(Target t, MethodBasedEvaluationContext context) {
    return key(t.key(), t.fixedKey(), t.where(), context);
  }

  private static double cost(Target t, MethodBasedEvaluationContext context) {
    Object v;
    try {
      v = t.cost().getValue(context);
    } catch (ExpressionException e) {
      throw new IllegalArgumentException(t.where() + ": cost '" + t.cost().getExpressionString()
          + "' could not be evaluated: " + e.getMessage(), e);
    }
    double c = v instanceof Number n ? n.doubleValue() : Double.NaN;
    if (v instanceof String s) {
      try {
        c = Double.parseDouble(s.trim());
      } catch (NumberFormatException e) {
        c = Double.NaN;
      }
    }
    if (!(c > 0) || Double.isInfinite(c)) {
      throw new IllegalArgumentException(t.where() + ": cost '" + t.cost().getExpressionString()
          + "' must give a positive number but gave " + v);
    }
    return c;
  }
}

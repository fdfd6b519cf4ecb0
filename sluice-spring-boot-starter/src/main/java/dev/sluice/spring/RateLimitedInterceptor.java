package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.LimitSpec;
import dev.sluice.RateLimiter;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

/** Decides each call of a {@link RateLimited} method before it runs. */
final class RateLimitedInterceptor implements MethodInterceptor {
  private static final System.Logger LOG = System.getLogger(RateLimitedInterceptor.class.getName());
  private static final SpelExpressionParser PARSER = new SpelExpressionParser();
  private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();
  private static final boolean REACTOR = ClassUtils.isPresent("reactor.core.publisher.Mono",
      RateLimitedInterceptor.class.getClassLoader());

  /** A method's annotation, parsed once. */
  record Target(String policy, Expression key, String fixedKey, Expression cost, Duration maxWait,
      String where) {}

  private final Supplier<SluiceLimiters> lookup;
  private volatile SluiceLimiters resolved;
  private final Map<Method, Target> targets = new ConcurrentHashMap<>();

  RateLimitedInterceptor(Supplier<SluiceLimiters> limiters) {
    this.lookup = limiters;
  }

  /** The limiters, looked up once (not when the interceptor is made: that is too early). */
  private SluiceLimiters limiters() {
    SluiceLimiters l = resolved;
    if (l == null) {
      resolved = l = lookup.get();
    }
    return l;
  }

  /**
   * The parsed annotation of {@code method}, checked against the policies.
   *
   * @throws SluiceConfigurationException naming the method and the problem
   */
  static Target parse(Method method, RateLimited a, Set<String> policies) {
    String where = "@RateLimited on " + method.getDeclaringClass().getName() + "." + method.getName();
    List<String> problems = new ArrayList<>();
    if (!policies.contains(a.policy())) {
      problems.add(where + ": policy: no policy '" + a.policy() + "' under sluice.policies (there"
          + " are " + new TreeSet<>(policies) + ")");
    }
    Expression key = null;
    Expression cost = null;
    try {
      key = a.key().isBlank() ? null : PARSER.parseExpression(a.key());
    } catch (ExpressionException e) {
      problems.add(where + ": key: not a SpEL expression: '" + a.key() + "': " + e.getMessage());
    }
    try {
      cost = PARSER.parseExpression(a.cost());
    } catch (ExpressionException e) {
      problems.add(where + ": cost: not a SpEL expression: '" + a.cost() + "': " + e.getMessage());
    }
    if (key != null) {
      checkVariables(method, "key", a.key(), key, problems, where);
    }
    if (cost != null) {
      checkVariables(method, "cost", a.cost(), cost, problems, where);
    }
    Duration wait = null;
    if (!a.maxWait().isBlank()) {
      wait = LimitSpec.parseDuration(a.maxWait().trim());
      if (wait == null) {
        problems.add(where + ": maxWait: must be a duration such as 250ms, 5s or 1m but was '"
            + a.maxWait() + "'");
      }
    }
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return new Target(a.policy(), key,
        method.getDeclaringClass().getSimpleName() + "." + method.getName(), cost, wait, where);
  }

  /**
   * Every {@code #name} an expression uses must be a parameter the method's compiled class names
   * ({@code #p0}/{@code #a0} by position, {@code #root} and {@code #this} always work): without
   * {@code -parameters} a name would evaluate to null at every call, so every caller would share
   * one bucket, and a typo would do the same.
   */
  static void checkVariables(Method method, String what, String text, Expression e,
      List<String> problems, String where) {
    if (!(e instanceof SpelExpression spel)) {
      return;
    }
    Set<String> used = new LinkedHashSet<>();
    variables(spel.getAST(), used);
    String[] names = NAMES.getParameterNames(method);
    for (String v : used) {
      if (v.equals("root") || v.equals("this")) {
        continue;
      }
      Matcher positional = Pattern.compile("[pa](\\d+)")
          .matcher(v);
      if (positional.matches()) {
        if (Integer.parseInt(positional.group(1)) >= method.getParameterCount()) {
          problems.add(where + ": " + what + " '" + text + "' uses #" + v + ", but the method has "
              + method.getParameterCount() + " parameter(s)");
        }
        continue;
      }
      if (names == null) {
        problems.add(where + ": " + what + " '" + text + "' names the parameter #" + v + ", but"
            + " the compiled class does not keep parameter names, so it would be null at every"
            + " call (and every caller would share one bucket): compile with -parameters (Maven:"
            + " <maven.compiler.parameters>true</maven.compiler.parameters>; Gradle:"
            + " options.compilerArgs << '-parameters'), or name it by position: #p0 or #a0");
      } else if (!Arrays.asList(names).contains(v)) {
        problems.add(where + ": " + what + " '" + text + "' names #" + v + ", which is not a"
            + " parameter of the method (its parameters: " + Arrays.toString(names)
            + ")");
      }
    }
  }

  private static void variables(SpelNode node,
      Set<String> out) {
    if (node instanceof VariableReference) {
      String s = node.toStringAST();
      out.add(s.startsWith("#") ? s.substring(1) : s);
    }
    for (int i = 0; i < node.getChildCount(); i++) {
      variables(node.getChild(i), out);
    }
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Target t = targets.computeIfAbsent(method, m -> {
      Method specific = AopUtils.getMostSpecificMethod(m, invocation.getThis() == null ? m.getDeclaringClass()
          : invocation.getThis().getClass());
      RateLimited a = AnnotatedElementUtils.findMergedAnnotation(specific, RateLimited.class);
      return parse(specific, a, limiters().all().keySet());
    });
    RateLimiter limiter = limiters().get(t.policy());
    MethodBasedEvaluationContext context =
        new MethodBasedEvaluationContext(invocation.getThis(), method, invocation.getArguments(), NAMES);
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
    if (REACTOR && (t.maxWait() != null || limiters().store().isPresent())
        && Reactive.onNonBlockingThread()) {
      // As Reactor's block() does: say so, rather than stall an event loop
      throw new IllegalStateException(t.where() + " returns " + returns.getSimpleName()
          + " and was called on the non-blocking thread " + Thread.currentThread().getName()
          + ": its " + (t.maxWait() != null ? "wait for room (maxWait)" : "decision on the shared"
          + " store") + " would block that thread. Return Mono, Flux or CompletionStage (decided"
          + " without blocking), or call it on a thread that may block (Schedulers.boundedElastic())");
    }
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

  /**
   * A call's key: {@code fixedKey} without an expression, else the expression's value as a
   * string (shared with {@link ConcurrencyLimited}).
   *
   * @throws IllegalArgumentException naming the annotation if it fails or gives null
   */
  static String key(Expression key, String fixedKey, String where,
      MethodBasedEvaluationContext context) {
    if (key == null) {
      return fixedKey;
    }
    Object v;
    try {
      v = key.getValue(context);
    } catch (ExpressionException e) {
      throw new IllegalArgumentException(where + ": key '" + key.getExpressionString()
          + "' could not be evaluated: " + e.getMessage(), e);
    }
    if (v == null) {
      throw new IllegalArgumentException(where + ": key '" + key.getExpressionString()
          + "' is null for this call");
    }
    return v.toString();
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

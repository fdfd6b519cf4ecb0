package dev.sluice.spring;

import dev.sluice.Specs;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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

/**
 * What the interceptors of {@link RateLimited} and {@link ConcurrencyLimited} methods share: the
 * limiters, looked up once; each method's annotation, found on its most specific declaration and
 * parsed once; SpEL expressions, their variables checked when parsed and evaluated per call;
 * {@code maxWait}; and the refusal to block a non-blocking thread. Each subclass decides a call
 * its own way (a rate decision, a permit held while the method runs).
 *
 * @param <A> the annotation
 * @param <T> a method's parsed annotation
 */
abstract class LimitedMethodInterceptor<A extends Annotation, T> implements MethodInterceptor {
  static final SpelExpressionParser PARSER = new SpelExpressionParser();
  static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();
  static final boolean REACTOR = ClassUtils.isPresent("reactor.core.publisher.Mono",
      LimitedMethodInterceptor.class.getClassLoader());
  private static final Pattern POSITIONAL = Pattern.compile("[pa](\\d+)");

  private final Class<A> annotation;
  private final Supplier<SluiceLimiters> lookup;
  private volatile SluiceLimiters resolved;
  private final Map<Method, T> targets = new ConcurrentHashMap<>();

  LimitedMethodInterceptor(Class<A> annotation, Supplier<SluiceLimiters> limiters) {
    this.annotation = annotation;
    this.lookup = limiters;
  }

  /** The limiters, looked up once (not when the interceptor is made: that is too early). */
  final SluiceLimiters limiters() {
    SluiceLimiters l = resolved;
    if (l == null) {
      resolved = l = lookup.get();
    }
    return l;
  }

  /** The invoked method's annotation (on its most specific declaration), parsed once. */
  final T target(MethodInvocation invocation) {
    return targets.computeIfAbsent(invocation.getMethod(), m -> {
      Method specific = AopUtils.getMostSpecificMethod(m, invocation.getThis() == null
          ? m.getDeclaringClass() : invocation.getThis().getClass());
      return parse(specific, AnnotatedElementUtils.findMergedAnnotation(specific, annotation),
          limiters());
    });
  }

  /**
   * The annotation of {@code method}, checked against the limiters.
   *
   * @throws SluiceConfigurationException naming the method and the problem
   */
  abstract T parse(Method method, A found, SluiceLimiters limiters);

  /** Where an annotation stands, as problems name it. */
  static String where(Class<? extends Annotation> type, Method method) {
    return "@" + type.getSimpleName() + " on " + method.getDeclaringClass().getName() + "."
        + method.getName();
  }

  /** A call's SpEL context: its target, method and arguments, parameters by name. */
  static MethodBasedEvaluationContext context(MethodInvocation invocation) {
    return new MethodBasedEvaluationContext(invocation.getThis(), invocation.getMethod(),
        invocation.getArguments(), NAMES);
  }

  /**
   * The SpEL expression of an attribute, its variables checked ({@link #checkVariables}); null,
   * with a problem, when it does not parse.
   */
  static Expression expression(Method method, String what, String text, List<String> problems,
      String where) {
    Expression e;
    try {
      e = PARSER.parseExpression(text);
    } catch (ExpressionException ex) {
      problems.add(where + ": " + what + ": not a SpEL expression: '" + text + "': "
          + ex.getMessage());
      return null;
    }
    checkVariables(method, what, text, e, problems, where);
    return e;
  }

  /**
   * {@code maxWait}: null when blank; a duration such as {@code 250ms}, at most {@code most}
   * (null: no bound); null, with a problem, otherwise.
   */
  static Duration maxWait(String text, Duration most, List<String> problems, String where) {
    if (text.isBlank()) {
      return null;
    }
    Duration wait = Specs.parseDuration(text.trim());
    if (wait == null || (most != null && wait.compareTo(most) > 0)) {
      problems.add(where + ": maxWait: must be a duration " + (most == null
          ? "such as 250ms, 5s or 1m" : "of at most 1m such as 250ms or 5s") + " but was '"
          + text + "'");
      return null;
    }
    return wait;
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
      Matcher positional = POSITIONAL.matcher(v);
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

  private static void variables(SpelNode node, Set<String> out) {
    if (node instanceof VariableReference) {
      String s = node.toStringAST();
      out.add(s.startsWith("#") ? s.substring(1) : s);
    }
    for (int i = 0; i < node.getChildCount(); i++) {
      variables(node.getChild(i), out);
    }
  }

  /**
   * A call's key: {@code fixedKey} without an expression, else the expression's value as a
   * string.
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

  /**
   * As Reactor's {@code block()} does: says so, rather than stall an event loop, when a method
   * that returns neither a publisher nor a stage would wait ({@code maxWait}) or call the shared
   * store on a non-blocking thread.
   *
   * @param waitFor what the wait waits for ("room", "a permit")
   * @param storeCall what the store call is ("decision on the shared store")
   */
  final void refuseToBlockAnEventLoop(String where, Class<?> returns, boolean waits,
      String waitFor, String storeCall) {
    if (REACTOR && (waits || limiters().store().isPresent()) && Reactive.onNonBlockingThread()) {
      throw new IllegalStateException(where + " returns " + returns.getSimpleName()
          + " and was called on the non-blocking thread " + Thread.currentThread().getName()
          + ": its " + (waits ? "wait for " + waitFor + " (maxWait)" : storeCall)
          + " would block that thread. Return Mono, Flux or CompletionStage (decided without"
          + " blocking), or call it on a thread that may block (Schedulers.boundedElastic())");
    }
  }
}

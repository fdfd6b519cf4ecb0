package dev.sluice.spring;

import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.reactivestreams.Publisher;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.ComposablePointcut;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * Proxies beans with {@link RateLimited} or {@link ConcurrencyLimited} methods, and checks each
 * annotation (its policy or limit exists, its expressions parse) as the bean is made, so a wrong
 * one stops the application at startup.
 */
final class RateLimitedPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor
    implements ApplicationContextAware {
  private static final long serialVersionUID = 1L;

  private final transient Supplier<SluiceLimiters> limiters;
  private transient boolean reactiveWeb;

  @Override
  public void setApplicationContext(ApplicationContext context) {
    reactiveWeb = ClassUtils.isPresent(
        "org.springframework.boot.web.reactive.context.ReactiveWebApplicationContext", null)
        && context instanceof org.springframework.boot.web.reactive.context
            .ReactiveWebApplicationContext;
  }

  RateLimitedPostProcessor(Supplier<SluiceLimiters> limiters) {
    this.limiters = limiters;
    this.advisor = new DefaultPointcutAdvisor(
        new ComposablePointcut(new AnnotationMatchingPointcut(null, RateLimited.class, true))
            .union(new AnnotationMatchingPointcut(null, ConcurrencyLimited.class, true)),
        new Both(new RateLimitedInterceptor(limiters),
            new ConcurrencyLimitedInterceptor(limiters)));
    setBeforeExistingAdvisors(true);
  }

  /**
   * The interceptor of each annotation a method has; with both, the rate limit decides first (a
   * call it refuses never takes a permit) and the permit is held around the call.
   */
  static final class Both implements MethodInterceptor {
    private final MethodInterceptor rate;
    private final MethodInterceptor concurrency;
    private final Map<Method, int[]> which = new ConcurrentHashMap<>();

    Both(MethodInterceptor rate, MethodInterceptor concurrency) {
      this.rate = rate;
      this.concurrency = concurrency;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
      int[] w = which.computeIfAbsent(invocation.getMethod(), m -> {
        Method specific = AopUtils.getMostSpecificMethod(m, invocation.getThis() == null
            ? m.getDeclaringClass() : invocation.getThis().getClass());
        return new int[] {
            AnnotatedElementUtils.hasAnnotation(specific, RateLimited.class) ? 1 : 0,
            AnnotatedElementUtils.hasAnnotation(specific, ConcurrencyLimited.class) ? 1 : 0};
      });
      if (w[0] == 1 && w[1] == 1) {
        return rate.invoke(new Then(invocation, concurrency));
      }
      return (w[0] == 1 ? rate : concurrency).invoke(invocation);
    }
  }

  /** {@code invocation}, whose {@code proceed} goes through {@code next} first. */
  private record Then(MethodInvocation invocation, MethodInterceptor next)
      implements MethodInvocation {
    @Override
    public Method getMethod() {
      return invocation.getMethod();
    }

    @Override
    public Object[] getArguments() {
      return invocation.getArguments();
    }

    @Override
    public Object proceed() throws Throwable {
      return next.invoke(invocation);
    }

    @Override
    public Object getThis() {
      return invocation.getThis();
    }

    @Override
    public AccessibleObject getStaticPart() {
      return invocation.getStaticPart();
    }
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (bean instanceof SluiceLimiters) {
      return bean;
    }
    Class<?> type = AopUtils.getTargetClass(bean);
    List<String> problems = new ArrayList<>();
    ReflectionUtils.doWithMethods(type, m -> {
      RateLimited a = AnnotatedElementUtils.findMergedAnnotation(m, RateLimited.class);
      if (a != null) {
        try {
          RateLimitedInterceptor.parse(m, a, limiters.get().all().keySet());
        } catch (SluiceConfigurationException e) {
          problems.addAll(e.problems());
        }
        String blocking = blockingHandler(m, "@RateLimited", "decision");
        if (blocking != null) {
          problems.add(blocking);
        }
      }
      ConcurrencyLimited c = AnnotatedElementUtils.findMergedAnnotation(m,
          ConcurrencyLimited.class);
      if (c != null) {
        try {
          ConcurrencyLimitedInterceptor.parse(m, c, limiters.get().allConcurrency().keySet());
        } catch (SluiceConfigurationException e) {
          problems.addAll(e.problems());
        }
        String blocking = blockingHandler(m, "@ConcurrencyLimited", "permit");
        if (blocking != null) {
          problems.add(blocking);
        }
      }
    });
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return super.postProcessAfterInitialization(bean, beanName);
  }

  /**
   * In a WebFlux application on a shared store, a {@code @RateLimited} request handler that does
   * not return {@code Mono}, {@code Flux} or {@code CompletionStage} runs on the event loop, and
   * its decision, a store round trip, would block it: found here, not at the first request.
   */
  private String blockingHandler(Method m, String annotation, String call) {
    if (!reactiveWeb || limiters.get().store().isEmpty()
        || !AnnotatedElementUtils.hasAnnotation(m,
            RequestMapping.class)) {
      return null;
    }
    Class<?> returns = m.getReturnType();
    if (CompletionStage.class.isAssignableFrom(returns)
        || (ClassUtils.isPresent("org.reactivestreams.Publisher", null)
            && Publisher.class.isAssignableFrom(returns))) {
      return null;
    }
    return annotation + " on " + m.getDeclaringClass().getName() + "." + m.getName() + ": a"
        + " WebFlux handler that returns " + returns.getSimpleName() + " runs on the event loop,"
        + " and its " + call + " on the " + limiters.get().storeName() + " store would block it:"
        + " return Mono or Flux (decided without blocking)";
  }
}

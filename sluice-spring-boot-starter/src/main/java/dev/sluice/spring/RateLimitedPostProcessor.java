package dev.sluice.spring;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.reactivestreams.Publisher;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * Proxies beans with {@link RateLimited} methods, and checks each annotation (its policy exists,
 * its expressions parse) as the bean is made, so a wrong one stops the application at startup.
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
        new AnnotationMatchingPointcut(null, RateLimited.class, true),
        new RateLimitedInterceptor(limiters));
    setBeforeExistingAdvisors(true);
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
        String blocking = blockingHandler(m);
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
  private String blockingHandler(Method m) {
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
    return "@RateLimited on " + m.getDeclaringClass().getName() + "." + m.getName() + ": a WebFlux"
        + " handler that returns " + returns.getSimpleName() + " runs on the event loop, and its"
        + " decision on the " + limiters.get().storeName() + " store would block it: return Mono"
        + " or Flux (decided without blocking)";
  }
}

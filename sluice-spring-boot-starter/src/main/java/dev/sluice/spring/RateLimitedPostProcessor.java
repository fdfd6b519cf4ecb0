package dev.sluice.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Proxies beans with {@link RateLimited} methods, and checks each annotation (its policy exists,
 * its expressions parse) as the bean is made, so a wrong one stops the application at startup.
 */
final class RateLimitedPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {
  private static final long serialVersionUID = 1L;

  private final transient Supplier<SluiceLimiters> limiters;

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
    Class<?> type = org.springframework.aop.support.AopUtils.getTargetClass(bean);
    List<String> problems = new ArrayList<>();
    ReflectionUtils.doWithMethods(type, m -> {
      RateLimited a = AnnotatedElementUtils.findMergedAnnotation(m, RateLimited.class);
      if (a != null) {
        try {
          RateLimitedInterceptor.parse(m, a, limiters.get().all().keySet());
        } catch (SluiceConfigurationException e) {
          problems.addAll(e.problems());
        }
      }
    });
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return super.postProcessAfterInitialization(bean, beanName);
  }
}

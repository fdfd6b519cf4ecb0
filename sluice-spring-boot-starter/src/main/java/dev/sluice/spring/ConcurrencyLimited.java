package dev.sluice.spring;

import dev.sluice.concurrency.Priority;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Caps the calls of a Spring bean's method in flight at a limit of
 * {@code sluice.concurrency.limits}: each call holds a permit while it runs, and gives it back when
 * it returns or throws ({@code DROPPED} for an exception, what adaptive limits read as overload).
 * A call that gets no permit throws {@link ConcurrencyLimitExceededException}, which the starter
 * answers in Spring MVC and WebFlux with {@code 503 Service Unavailable} (load shed: one key for
 * the method), or {@code 429 Too Many Requests} for a method limited per {@link #key()}, with
 * {@code Retry-After: 1} and a problem document.
 *
 * <pre>{@code
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#concurrency-limits-sluiceconcurrency">docs/spring.md, "Concurrency limits (sluice.concurrency)"</a>.
 *
 * @ConcurrencyLimited(limit = "db", priority = Priority.SHEDDABLE)
 * public Report monthlyReport() { ... }
 * }</pre>
 *
 * <p>A method returning {@code Mono}, {@code Flux} or {@code CompletionStage} acquires
 * asynchronously and holds its permit until the publisher or stage ends (a cancellation ends it
 * {@code IGNORED}); no thread waits. Any other method acquires on the calling thread.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ConcurrencyLimited {
  /** The limit, a name under {@code sluice.concurrency.limits}. */
  String limit();

  /**
   * The key, a SpEL expression over the arguments ({@code #tenant}, {@code #p0}); its value's
   * {@code toString()}. Empty (the default): one key for the method, its class and name.
   */
  String key() default "";

  /** The priority of the calls (the limit's shares decide what each may hold). */
  Priority priority() default Priority.NORMAL;

  /**
   * How long a call may wait for a permit, such as {@code 250ms}; empty (the default) refuses at
   * once.
   */
  String maxWait() default "";
}

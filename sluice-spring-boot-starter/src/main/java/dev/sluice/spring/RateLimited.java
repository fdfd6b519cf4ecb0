package dev.sluice.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Holds calls of a Spring bean's method to a policy of {@code sluice.policies}. A call over the
 * limit throws {@link RateLimitExceededException}, which the starter answers in Spring MVC and
 * WebFlux with {@code 429 Too Many Requests}, {@code Retry-After} and the RateLimit fields (or
 * {@code 503} when the store is down and its failure policy refuses).
 *
 * <pre>{@code
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#ratelimited-methods">docs/spring.md, "@RateLimited methods"</a>.
 *
 * @RateLimited(policy = "reports", key = "#user.id", cost = "#rows.size()")
 * public Report build(User user, List<Row> rows) { ... }
 * }</pre>
 *
 * <p>A method returning {@code Mono}, {@code Flux} or {@code CompletionStage} is decided
 * asynchronously ({@code tryAcquireAsync}, or {@code acquireAsync} with {@link #maxWait()}): no
 * thread waits for the store, so it is safe on an event loop; the error is signalled through the
 * returned publisher. Any other method decides on the calling thread.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RateLimited {
  /** The policy, a name under {@code sluice.policies}. */
  String policy();

  /**
   * The key, a SpEL expression over the arguments ({@code #user.id}, {@code #p0}); its value's
   * {@code toString()}. Empty (the default): one key for the method, its class and name.
   */
  String key() default "";

  /** The cost, a SpEL expression giving a positive number; default {@code 1}. */
  String cost() default "1";

  /**
   * How long a call may wait for room, such as {@code 5s} or {@code 250ms} (blocking acquire for
   * background jobs; asynchronous for reactive methods); empty (the default) refuses at once.
   */
  String maxWait() default "";
}

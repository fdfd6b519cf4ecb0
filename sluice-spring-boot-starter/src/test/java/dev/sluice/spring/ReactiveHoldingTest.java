package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInvocation;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A {@code @ConcurrencyLimited} method returning a {@code Mono} or a {@code Flux} gives its permit
 * back before its end reaches the caller, as a blocking method does before it returns: a caller
 * that calls again as soon as it has the answer is not refused by its own first call. Each case
 * records the permits in flight at the moment the end arrives downstream (before, the release
 * ran after the end had been passed on, and a WebFlux client could be answered 503 by a second
 * request sent on the first one's response).
 */
class ReactiveHoldingTest {
  private final ConcurrencyLimiter limiter = ConcurrencyLimiter.builder().limit(1).build();
  private final ConcurrencyLimitedInterceptor.Target target = new ConcurrencyLimitedInterceptor
      .Target("exports", null, "k", Priority.NORMAL, null, "ReactiveHoldingTest");
  private final List<String> seen = new ArrayList<>();

  /** A method invocation whose method returns what {@code body} supplies. */
  private static MethodInvocation invocation(Supplier<Object> body) {
    return new MethodInvocation() {
      @Override
      public Method getMethod() {
        throw new UnsupportedOperationException();
      }

      @Override
      public Object[] getArguments() {
        return new Object[0];
      }

      @Override
      public Object proceed() {
        return body.get();
      }

      @Override
      public Object getThis() {
        return this;
      }

      @Override
      public AccessibleObject getStaticPart() {
        throw new UnsupportedOperationException();
      }
    };
  }

  private String inFlight(String at) {
    return at + ": " + limiter.inFlight("k") + " in flight";
  }

  @SuppressWarnings("unchecked")
  private Mono<Object> mono(Supplier<Object> body) {
    return (Mono<Object>) Reactive.holding(Mono.class, limiter, target, "k", invocation(body));
  }

  @SuppressWarnings("unchecked")
  private Flux<Object> flux(Supplier<Object> body) {
    return (Flux<Object>) Reactive.holding(Flux.class, limiter, target, "k", invocation(body));
  }

  @Test
  void aMonosValue_arrivesAfterItsPermitIsBack() {
    Object value = mono(() -> Mono.fromSupplier(() -> {
      seen.add(inFlight("running"));
      return "done";
    })).doOnNext(v -> seen.add(inFlight("value"))).block();
    assertThat(value).isEqualTo("done");
    assertThat(seen).containsExactly("running: 1 in flight", "value: 0 in flight");
    assertThat(limiter.inFlight("k")).isZero();
  }

  @Test
  void anEmptyMono_completesAfterItsPermitIsBack() {
    mono(() -> Mono.empty()).doOnSuccess(v -> seen.add(inFlight("completed"))).block();
    assertThat(seen).containsExactly("completed: 0 in flight");
  }

  @Test
  void aFailedMono_failsAfterItsPermitIsBack() {
    Mono<Object> failed = mono(() -> Mono.error(new IllegalStateException("the export failed")))
        .doOnError(e -> seen.add(inFlight("error")));
    assertThat(failed.onErrorResume(e -> Mono.just(e.getMessage())).block())
        .isEqualTo("the export failed");
    assertThat(seen).containsExactly("error: 0 in flight");
  }

  @Test
  void aFlux_holdsItsPermitWhileItEmits_andCompletesAfterItIsBack() {
    List<Object> items = flux(() -> Flux.just(1, 2))
        .doOnNext(i -> seen.add(inFlight("item " + i)))
        .doOnComplete(() -> seen.add(inFlight("completed"))).collectList().block();
    assertThat(items).containsExactly(1, 2);
    assertThat(seen).containsExactly("item 1: 1 in flight", "item 2: 1 in flight",
        "completed: 0 in flight");
  }

  @Test
  void aSecondCall_sentOnTheFirstOnesAnswer_isAdmitted() {
    Object second = mono(() -> Mono.just("first"))
        .flatMap(first -> mono(() -> Mono.just(first + ", then second"))).block();
    assertThat(second).isEqualTo("first, then second");
  }

  @Test
  void whileAPermitIsHeld_anotherCallIsRefused() {
    Mono<Object> held = mono(() -> mono(() -> Mono.just("inner")));
    assertThat(held.onErrorResume(ConcurrencyLimitExceededException.class,
        e -> Mono.just("refused: " + e.problem().status())).block()).isEqualTo("refused: 503");
    assertThat(limiter.inFlight("k")).isZero();
  }
}

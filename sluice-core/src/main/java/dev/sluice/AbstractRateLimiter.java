package dev.sluice;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What every store shares: argument checks, the monotonic guard on the clock, and blocking and
 * asynchronous acquire built on {@link #tryAcquire(String, double)}.
 */
abstract class AbstractRateLimiter implements RateLimiter {
  final List<Limit> limits;
  final Clock clock;
  final Scheduler scheduler;

  AbstractRateLimiter(List<Limit> limits, Clock clock, Scheduler scheduler) {
    this.limits = List.copyOf(limits);
    this.clock = clock == Clock.system() ? clock : new MonotonicClock(clock);
    this.scheduler = scheduler;
  }

  @Override
  public final List<Limit> limits() {
    return limits;
  }

  @Override
  public Decision acquire(String key, double cost, Duration timeout) throws InterruptedException {
    Checks.key(key);
    Checks.cost(cost);
    long timeoutNanos = Ticks.toNanosSaturated(Checks.nonNegative("timeout", timeout));
    long start = clock.nanoTime();
    for (;;) {
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
      Decision d = tryAcquire(key, cost);
      if (d.isAllowed()) {
        return d;
      }
      long left = timeoutNanos - (clock.nanoTime() - start);
      if (d.retryAfterNanos() > left) {
        return d;
      }
      clock.sleep(d.retryAfterNanos());
    }
  }

  @Override
  public CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout) {
    Checks.key(key);
    Checks.cost(cost);
    long timeoutNanos = Ticks.toNanosSaturated(Checks.nonNegative("timeout", timeout));
    CompletableFuture<Decision> future = new CompletableFuture<>();
    attempt(future, key, cost, timeoutNanos, clock.nanoTime());
    return future;
  }

  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  private void attempt(CompletableFuture<Decision> future, String key, double cost,
      long timeoutNanos, long start) {
    if (future.isDone()) {
      return;
    }
    CompletableFuture<Decision> next;
    try {
      next = tryAcquireAsync(key, cost);
    } catch (RuntimeException | Error e) {
      future.completeExceptionally(e);
      return;
    }
    next.whenComplete((d, failure) -> {
      if (failure != null) {
        future.completeExceptionally(failure);
        return;
      }
      // User code (the clock, the scheduler) runs on a store's or the scheduler's thread here:
      // whatever it throws fails this one call, never that thread, and never leaves the
      // caller's future pending.
      try {
        long left = timeoutNanos - (clock.nanoTime() - start);
        if (d.isAllowed() || d.retryAfterNanos() > left) {
          future.complete(d);
        } else {
          scheduler.schedule(() -> attempt(future, key, cost, timeoutNanos, start),
              d.retryAfterNanos());
        }
      } catch (RuntimeException | Error e) {
        future.completeExceptionally(new IllegalStateException("acquireAsync(" + key + ") could"
            + " not wait for its retry: the limiter's scheduler (" + scheduler + ") or clock ("
            + clock + ") threw " + e, e));
      }
    });
  }

  /** Makes any clock monotonic: time that goes backwards reads as no time passing. */
  static final class MonotonicClock implements Clock {
    private final Clock delegate;
    private final AtomicLong last = new AtomicLong(Long.MIN_VALUE);

    MonotonicClock(Clock delegate) {
      this.delegate = delegate;
    }

    @Override
    public long nanoTime() {
      long t = delegate.nanoTime();
      long prev = last.get();
      while (t > prev) {
        if (last.compareAndSet(prev, t)) {
          return t;
        }
        prev = last.get();
      }
      return prev;
    }

    @Override
    public void sleep(long nanos) throws InterruptedException {
      delegate.sleep(nanos);
    }
  }
}

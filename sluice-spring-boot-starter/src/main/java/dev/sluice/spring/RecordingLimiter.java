package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.RateLimiter;
import dev.sluice.TopKeys;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A policy's limiter that tells a {@link Recorder} of each enforcing decision (not of checks):
 * the console's keys refused most ({@code sluice.console.enabled}), the current observation
 * ({@code sluice.observation}). Every decision is its limiter's.
 */
final class RecordingLimiter implements RateLimiter {
  /** Told of each enforcing decision, on the deciding thread. */
  @FunctionalInterface
  interface Recorder {
    void record(String key, Decision decision);

    /** A recorder that adds each refused key to {@code sketch}. */
    static Recorder refusals(TopKeys sketch) {
      return (key, d) -> {
        if (!d.isAllowed() && !d.isUnavailable()) {
          sketch.add(key);
        }
      };
    }

    /** Both recorders, in order. */
    default Recorder then(Recorder next) {
      return (key, d) -> {
        record(key, d);
        next.record(key, d);
      };
    }
  }

  private final RateLimiter limiter;
  private final Recorder recorder;

  RecordingLimiter(RateLimiter limiter, Recorder recorder) {
    this.limiter = limiter;
    this.recorder = recorder;
  }

  private Decision counted(String key, Decision d) {
    recorder.record(key, d);
    return d;
  }

  private CompletableFuture<Decision> counted(String key, CompletableFuture<Decision> d) {
    return d.thenApply(x -> counted(key, x));
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    return counted(key, limiter.tryAcquire(key, cost));
  }

  @Override
  public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
    return counted(key, limiter.tryAcquireAsync(key, cost));
  }

  @Override
  public Decision check(String key, double cost) {
    return limiter.check(key, cost);
  }

  @Override
  public CompletableFuture<Decision> checkAsync(String key, double cost) {
    return limiter.checkAsync(key, cost);
  }

  @Override
  public Decision fillUp(String key, double cost) {
    return limiter.fillUp(key, cost);
  }

  @Override
  public CompletableFuture<Decision> fillUpAsync(String key, double cost) {
    return limiter.fillUpAsync(key, cost);
  }

  @Override
  public Decision reserve(String key, double cost) {
    return counted(key, limiter.reserve(key, cost));
  }

  @Override
  public CompletableFuture<Decision> reserveAsync(String key, double cost) {
    return counted(key, limiter.reserveAsync(key, cost));
  }

  @Override
  public Decision acquire(String key, double cost, Duration timeout) throws InterruptedException {
    return counted(key, limiter.acquire(key, cost, timeout));
  }

  @Override
  public CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout) {
    return counted(key, limiter.acquireAsync(key, cost, timeout));
  }

  @Override
  public void reset(String key) {
    limiter.reset(key);
  }

  @Override
  public List<Limit> limits() {
    return limiter.limits();
  }

  @Override
  public LimiterStats stats() {
    return limiter.stats();
  }

  @Override
  public void close() {
    limiter.close();
  }
}

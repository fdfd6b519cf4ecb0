package dev.sluice.quota;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.RateLimiter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Function;

/** {@link Quotas#rateLimiter}: each key decided by its quota's limiter, else the defaults. */
final class QuotaRateLimiter implements RateLimiter {
  /** Limiters of distinct quota limits kept at most. */
  static final int MAX_LIMITERS = 1_000;

  private record Target(RateLimiter limiter, String key) {}

  private final Quotas quotas;
  private final String policy;
  private final RateLimiter defaults;
  private final Function<List<Limit>, RateLimiter> build;
  /** A quota's limiter and the prefix of its keys (the limits' digest, made once). */
  private record Built(RateLimiter limiter, String prefix) {}

  /** By the quota's limits, least recently used first. */
  private final LinkedHashMap<List<Limit>, Built> limiters =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<List<Limit>, Built> eldest) {
          if (size() > MAX_LIMITERS) {
            eldest.getValue().limiter().close();
            return true;
          }
          return false;
        }
      };

  QuotaRateLimiter(Quotas quotas, String policy, RateLimiter defaults,
      Function<List<Limit>, RateLimiter> build) {
    this.quotas = quotas;
    this.policy = policy;
    this.defaults = defaults;
    this.build = build;
  }

  /** The digest that prefixes a quota's keys: 12 hex digits of SHA-256 of its limits. */
  static String digest(List<Limit> limits) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(limits.toString()
          .getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java platform", e);
    }
  }

  private Target target(String key) {
    Quota q = quotas.find(policy, key);
    if (q == null || q.isConcurrency()) {
      return new Target(defaults, key);
    }
    Built b;
    synchronized (limiters) {   // the digest is hashed once per distinct limits, not per call
      b = limiters.get(q.limits());
      if (b == null) {
        b = new Built(build.apply(q.limits()), "quota:" + digest(q.limits()) + ":");
        limiters.put(q.limits(), b);
      }
    }
    return new Target(b.limiter(), b.prefix() + key);
  }

  /** {@code call} on the limiter and key that decide {@code key}. */
  private <T> T on(String key, BiFunction<RateLimiter, String, T> call) {
    Target t = target(key);
    return call.apply(t.limiter, t.key);
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    return on(key, (l, k) -> l.tryAcquire(k, cost));
  }

  @Override
  public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
    return on(key, (l, k) -> l.tryAcquireAsync(k, cost));
  }

  @Override
  public Decision check(String key, double cost) {
    return on(key, (l, k) -> l.check(k, cost));
  }

  @Override
  public CompletableFuture<Decision> checkAsync(String key, double cost) {
    return on(key, (l, k) -> l.checkAsync(k, cost));
  }

  @Override
  public Decision fillUp(String key, double cost) {
    return on(key, (l, k) -> l.fillUp(k, cost));
  }

  @Override
  public CompletableFuture<Decision> fillUpAsync(String key, double cost) {
    return on(key, (l, k) -> l.fillUpAsync(k, cost));
  }

  @Override
  public Decision reserve(String key, double cost) {
    return on(key, (l, k) -> l.reserve(k, cost));
  }

  @Override
  public CompletableFuture<Decision> reserveAsync(String key, double cost) {
    return on(key, (l, k) -> l.reserveAsync(k, cost));
  }

  @Override
  public Decision acquire(String key, double cost, Duration timeout) throws InterruptedException {
    Target t = target(key);
    return t.limiter.acquire(t.key, cost, timeout);
  }

  @Override
  public CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout) {
    return on(key, (l, k) -> l.acquireAsync(k, cost, timeout));
  }

  @Override
  public void reset(String key) {
    Target t = target(key);
    t.limiter.reset(t.key);
  }

  /** The policy's own limits (a key's quota may replace them). */
  @Override
  public List<Limit> limits() {
    return defaults.limits();
  }

  /** The policy's own limiter's stats (quotas' limiters are not counted in). */
  @Override
  public LimiterStats stats() {
    return defaults.stats();
  }

  @Override
  public void close() {
    synchronized (limiters) {
      limiters.values().forEach(b -> b.limiter().close());
      limiters.clear();
    }
    defaults.close();
  }
}

package dev.sluice.redis;

import dev.sluice.concurrency.Acquisition;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Outcome;
import dev.sluice.concurrency.Permit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One JVM of {@link RedisPermitFaultsTest}, in one of two modes.
 *
 * <p>{@code load}: {@code threads} threads share one limiter of {@code limit} permits on the key
 * {@code shared} in the window the test opens once every JVM is ready ({@link WorkerJvms}).
 * Each thread keeps up to six permits (weights 1 or 2, half of them taken by a waiting acquire),
 * releasing its oldest when it holds six or is refused. An independent counter in Redis (INCRBY
 * after each acquisition, DECRBY before each release, not Sluice's state) sees the weight in
 * flight across every JVM; the most it saw is printed with the counts.
 *
 * <p>{@code hold}: takes {@code threads} permits, prints {@code holding=n}, and waits to be
 * killed.
 *
 * <p>{@code defaults}: as {@code load}, on the library's defaults (the store's 50-ms timeout, the
 * limiter's breaker; the lease as given), with no independent counter: at the window's end
 * every thread releases what it holds (the store may be paused then) and the JVM prints
 * {@code stopped acquired=n refused=n degraded=n} and exits.
 */
public final class PermitWorker {
  /** A cold JVM on a busy host may take more than the default 10 s to load the script. */
  private static final Duration STARTUP = Duration.ofSeconds(60);

  private PermitWorker() {}

  public static void main(String[] args) throws Exception {
    String uri = args[0];
    String prefix = args[1];
    String mode = args[2];
    int threads = Integer.parseInt(args[3]);
    int limit = Integer.parseInt(args[4]);
    long leaseMillis = Long.parseLong(args[5]);
    if (mode.equals("defaults")) {
      onDefaults(uri, prefix, threads, limit, leaseMillis);
      return;
    }
    try (RedisStore store = RedisStore.builder(uri).prefix(prefix)
        .commandTimeout(Duration.ofSeconds(2)).startupTimeout(STARTUP).build();
        ConcurrencyLimiter limiter = ConcurrencyLimiter.builder().limit(limit)
            .lease(Duration.ofMillis(leaseMillis)).store(store).build()) {
      if (mode.equals("hold")) {
        List<Permit> held = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          held.add(limiter.tryAcquire("shared").permit());
        }
        System.out.println("holding=" + held.size());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
        return;
      }
      RedisClient client = RedisClient.create(uri);
      StatefulRedisConnection<String, String> counter = client.connect();
      long[] window = WorkerJvms.window();   // every JVM is built: the load starts together
      long start = window[0];
      long end = window[1];
      String counterKey = prefix + "independent-counter";
      AtomicLong most = new AtomicLong();
      AtomicLong acquired = new AtomicLong();
      AtomicLong released = new AtomicLong();
      AtomicLong failures = new AtomicLong();
      List<Thread> all = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        boolean waits = t % 2 == 0;
        int seed = t;
        Thread thread = new Thread(() -> {
          RedisCommands<String, String> redis = counter.sync();
          ArrayDeque<Permit> mine = new ArrayDeque<>();
          int i = seed;
          while (System.currentTimeMillis() < start) {
            LockSupport.parkNanos(1_000_000);
          }
          while (System.currentTimeMillis() < end) {
            int weight = 1 + (i++ % 2);
            Acquisition a = waits ? limiter.acquire("shared", weight, Duration.ofMillis(20))
                : limiter.tryAcquire("shared", weight);
            if (a.isDegraded()) {
              failures.incrementAndGet();
            }
            if (a.isAcquired()) {
              acquired.incrementAndGet();
              most.accumulateAndGet(redis.incrby(counterKey, weight), Math::max);
              mine.addLast(a.permit());
            }
            if (!mine.isEmpty() && (mine.size() >= 6 || !a.isAcquired())) {
              Permit oldest = mine.pollFirst();
              redis.decrby(counterKey, oldest.weight());
              if (oldest.release(Outcome.SUCCESS)) {
                released.incrementAndGet();
              }
            }
          }
          for (Permit p : mine) {
            redis.decrby(counterKey, p.weight());
            if (p.release(Outcome.SUCCESS)) {
              released.incrementAndGet();
            }
          }
        });
        thread.start();
        all.add(thread);
      }
      for (Thread thread : all) {
        thread.join();
      }
      System.out.printf("acquired=%d released=%d most=%d failures=%d%n", acquired.get(),
          released.get(), most.get(), failures.get());
      counter.close();
      client.shutdown();
    }
  }

  private static void onDefaults(String uri, String prefix, int threads, int limit,
      long leaseMillis) throws Exception {
    try (RedisStore store = RedisStore.builder(uri).prefix(prefix).startupTimeout(STARTUP)
        .build();
        ConcurrencyLimiter limiter = ConcurrencyLimiter.builder().limit(limit)
            .lease(Duration.ofMillis(leaseMillis)).store(store).build()) {
      long[] window = WorkerJvms.window();   // every JVM is built: the load starts together
      long start = window[0];
      long end = window[1];
      AtomicLong acquired = new AtomicLong();
      AtomicLong refused = new AtomicLong();
      AtomicLong degraded = new AtomicLong();
      List<Thread> all = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        boolean waits = t % 2 == 0;
        Thread thread = new Thread(() -> {
          ArrayDeque<Permit> mine = new ArrayDeque<>();
          while (System.currentTimeMillis() < start) {
            LockSupport.parkNanos(1_000_000);
          }
          while (System.currentTimeMillis() < end) {
            Acquisition a = waits ? limiter.acquire("shared", 1, Duration.ofMillis(100))
                : limiter.tryAcquire("shared");
            if (a.isDegraded()) {
              degraded.incrementAndGet();
            }
            if (a.isAcquired()) {
              acquired.incrementAndGet();
              mine.addLast(a.permit());
            } else {
              refused.incrementAndGet();
            }
            if (!mine.isEmpty() && (mine.size() >= 3 || !a.isAcquired())) {
              mine.pollFirst().release(Outcome.SUCCESS);
            }
            LockSupport.parkNanos(1_000_000);
          }
          mine.forEach(p -> p.release(Outcome.SUCCESS));
        });
        thread.start();
        all.add(thread);
      }
      for (Thread thread : all) {
        thread.join();
      }
      System.out.printf("stopped acquired=%d refused=%d degraded=%d%n", acquired.get(),
          refused.get(), degraded.get());
      System.out.flush();
      Thread.sleep(3000);   // the limiter's cancels go on until the store answers
    }
  }
}

package dev.sluice.benchmarks;

import dev.sluice.LeaseSettings;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.redis.RedisStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import redis.embedded.RedisServer;

/**
 * A fleet on one hot key of a real Redis: 8 limiter instances, each with its own connection,
 * 2 caller threads each (or 5:1 skewed), calling as fast as they can for a few seconds; central
 * mode (one Lua call per decision) against fleet mode (leases), in the same run. Reports
 * decisions a second summed over the instances, what was admitted against the limit and the
 * bound of docs/fleet.md, and the store calls made.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.FleetLoad
 * [redis://host:port] [seconds]}; with no URI it starts a Redis 6.2 (embedded-redis) on loopback.
 */
public final class FleetLoad {
  static final int INSTANCES = 8;
  static final double RATE = 20_000;
  static final double CAPACITY = 2_000;
  static final double SHARE = Double.parseDouble(System.getProperty("share", "0.01"));

  private FleetLoad() {}

  public static void main(String[] args) throws Exception {
    String uri = args.length > 0 && args[0].startsWith("redis") ? args[0] : null;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    RedisServer server = LoadHarness.embeddedRedisUnless(uri);
    uri = LoadHarness.redisUri(uri, server);
    System.out.printf(Locale.ROOT, "redis: %s, %d s per run, %d cores; %d instances on one key,"
            + " limit %s/s capacity %s, leases: lifetime 200 ms, excess share %s%%%n", uri, seconds,
        Runtime.getRuntime().availableProcessors(), INSTANCES, (long) RATE, (long) CAPACITY,
        SHARE * 100);
    System.out.printf(Locale.ROOT, "%-8s %-7s %14s %12s %12s %12s %10s %12s%n", "mode", "traffic",
        "decisions/s", "admitted", "limit most", "bound", "excess", "store calls");
    try {
      for (int[] threads : new int[][] {{2, 2, 2, 2, 2, 2, 2, 2}, {5, 1, 1, 1, 1, 1, 1, 1}}) {
        String traffic = threads[0] == threads[1] ? "even" : "5:1";
        double central = run(uri, false, threads, traffic, seconds);
        double fleet = run(uri, true, threads, traffic, seconds);
        System.out.printf(Locale.ROOT, "fleet/central decisions per second (%s): %.1f%n",
            traffic, fleet / central);
      }
    } finally {
      if (server != null) {
        server.stop();
      }
    }
  }

  /** A store that counts every call made to it (decisions, leases, releases, heartbeats). */
  private record Counted(RedisStore store, AtomicLong calls) implements dev.sluice.spi.DecisionStore {
    @Override
    public long ticksPerSecond() {
      return store.ticksPerSecond();
    }

    @Override
    public dev.sluice.spi.Observation apply(String key, dev.sluice.spi.StoreRequest request) {
      calls.incrementAndGet();
      return store.apply(key, request);
    }

    @Override
    public java.util.concurrent.CompletableFuture<dev.sluice.spi.Observation> applyAsync(
        String key, dev.sluice.spi.StoreRequest request) {
      calls.incrementAndGet();
      return store.applyAsync(key, request);
    }

    @Override
    public java.util.concurrent.CompletableFuture<Integer> liveInstances(String fleet,
        String instance, long ttlMillis) {
      calls.incrementAndGet();
      return store.liveInstances(fleet, instance, ttlMillis);
    }

    @Override
    public void reset(String key) {
      store.reset(key);
    }
  }

  /** One run; returns the decisions a second summed over the instances. */
  private static double run(String uri, boolean leased, int[] threads, String traffic,
      int seconds) throws Exception {
    String prefix = "fleetload:" + System.nanoTime() + ":";
    Limit limit = Limit.leakyBucket(CAPACITY, Rate.perSecond(RATE));
    List<RedisStore> stores = new ArrayList<>();
    AtomicLong storeCalls = new AtomicLong();
    List<RateLimiter> fleet = new ArrayList<>();
    for (int i = 0; i < INSTANCES; i++) {
      RedisStore store = RedisStore.builder(uri).prefix(prefix)
          .commandTimeout(Duration.ofSeconds(2)).build();
      stores.add(store);
      Sluice.Builder b = Sluice.builder().limit(limit).store(new Counted(store, storeCalls));
      if (leased) {
        b.leases(LeaseSettings.defaults().withExcessShare(SHARE).withInstances(INSTANCES));
      }
      fleet.add(b.build());
    }
    // warm up the JIT and make the key hot everywhere, then start from an idle bucket
    for (RateLimiter l : fleet) {
      for (int i = 0; i < 20_000; i++) {
        l.tryAcquire("warm");
      }
    }
    long callsBefore = storeCalls.get();
    AtomicLong decisions = new AtomicLong();
    AtomicLong admitted = new AtomicLong();
    List<Thread> callers = new ArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    long[] window = new long[2];
    for (int i = 0; i < INSTANCES; i++) {
      RateLimiter l = fleet.get(i);
      for (int t = 0; t < threads[i]; t++) {
        Thread th = new Thread(() -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            return;
          }
          long n = 0;
          long a = 0;
          long end = window[1];
          while (System.nanoTime() < end) {
            n++;
            if (l.tryAcquire("hot").isAllowed()) {
              a++;
            }
          }
          decisions.addAndGet(n);
          admitted.addAndGet(a);
        });
        th.start();
        callers.add(th);
      }
    }
    window[0] = System.nanoTime();
    window[1] = window[0] + seconds * 1_000_000_000L;
    go.countDown();
    for (Thread th : callers) {
      th.join();
    }
    double elapsed = (System.nanoTime() - window[0]) / 1e9;
    long calls = storeCalls.get() - callsBefore;   // every call of the run: decisions, leases
    for (RateLimiter l : fleet) {
      l.close();
    }
    for (RedisStore s : stores) {
      s.close();
    }
    double most = CAPACITY + RATE * elapsed;
    long bound = leased ? (long) Math.floor(Math.min(CAPACITY, Math.min(SHARE * RATE, RATE * 0.2))
        / INSTANCES) * INSTANCES : 0;
    double perSecond = decisions.get() / elapsed;
    System.out.printf(Locale.ROOT, "%-8s %-7s %,14.0f %,12d %,12.0f %,12d %,10.0f %,12d%n",
        leased ? "fleet" : "central", traffic, perSecond, admitted.get(), most, bound,
        Math.max(0, admitted.get() - most), calls);
    return perSecond;
  }
}

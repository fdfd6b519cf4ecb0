package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.StoreFailure;
import dev.sluice.testkit.Ports;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.embedded.Redis;
import redis.embedded.RedisShardedCluster;

/**
 * Issue 11, defect 11: a real Redis Cluster of three masters with a replica each; under load the
 * master owning a hot key is killed with SIGKILL. The store follows the failover once the cluster
 * has promoted the replica, keys on the two healthy shards are never degraded, and a store can
 * still be built while the dead node is the first seed.
 */
class RedisClusterFailoverTest {
  private static RedisShardedCluster cluster;
  private static List<Integer> ports;

  @BeforeAll
  static void startCluster() throws Exception {
    ports = Ports.forRedisCluster(6);
    cluster = RedisShardedCluster.newRedisCluster().serverPorts(ports)
        .shard("a", 1).shard("b", 1).shard("c", 1)
        .initializationTimeout(Duration.ofSeconds(30)).build();
    cluster.start();
    RedisClusterReady.await(ports, Duration.ofSeconds(30));
    for (int port : ports) {
      // embedded-redis starts nodes with a 5 s node timeout; 1 s makes the failover quicker.
      // Without full coverage required, the healthy shards keep serving while one has no master
      // (with the default, Redis itself answers CLUSTERDOWN for every key until the promotion).
      admin(port, c -> c.sync().configSet("cluster-node-timeout", "1000"));
      admin(port, c -> c.sync().configSet("cluster-require-full-coverage", "no"));
    }
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      for (Redis r : cluster.servers()) {
        try {
          r.stop();
        } catch (Exception | Error ignored) {
          // the killed node is gone already
        }
      }
    }
  }

  private interface Admin<T> {
    T run(StatefulRedisConnection<String, String> c);
  }

  private static <T> T admin(int port, Admin<T> action) {
    RedisClient client = RedisClient.create("redis://127.0.0.1:" + port);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      c.setTimeout(Duration.ofSeconds(2));
      return action.run(c);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }

  /** The port of the master serving {@code slot}, as the node on {@code askPort} sees it. */
  private static int masterOf(int slot, int askPort) {
    String nodes = admin(askPort, c -> c.sync().clusterNodes());
    for (String line : nodes.split("\n")) {
      String[] f = line.trim().split(" ");
      if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) {
        continue;
      }
      for (int i = 8; i < f.length; i++) {
        String[] range = f[i].split("-");
        if (range[0].startsWith("[")) {
          continue;
        }
        int lo = Integer.parseInt(range[0]);
        int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
        if (slot >= lo && slot <= hi) {
          String addr = f[1].split("@")[0];
          return Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
        }
      }
    }
    return -1;
  }

  @Test
  void masterKilledMidLoad_storeFollowsTheFailover_andHealthyShardsAreNeverDegraded() throws Exception {
    List<String> seeds = new ArrayList<>();
    for (int p : ports) {
      seeds.add("redis://127.0.0.1:" + p);
    }
    RedisStore store = RedisStore.clusterBuilder(seeds.toArray(new String[0]))
        .prefix("failover:").commandTimeout(Duration.ofMillis(200)).build();
    // a bucket that never fills during the test (1e7 units) and leaks 1 a second
    long started = System.nanoTime();
    RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(1e7, Rate.perSecond(1)))
        .store(store).onStoreFailure(StoreFailure.FAIL_CLOSED).build();
    String hot = "hot";
    int hotSlot = SlotHash.getSlot("failover:{" + hot + "}");
    int victim = masterOf(hotSlot, ports.get(0));
    assertThat(victim).isPositive();
    List<String> healthy = new ArrayList<>();
    for (int i = 0; healthy.size() < 50; i++) {
      String k = "cold-" + i;
      if (masterOf(SlotHash.getSlot("failover:{" + k + "}"), ports.get(0)) != victim) {
        healthy.add(k);
      }
    }
    long pid = admin(victim, c -> Long.parseLong(c.sync().info("server").lines()
        .filter(l -> l.startsWith("process_id:")).findFirst().orElseThrow().substring(11).trim()));

    ExecutorService pool = Executors.newFixedThreadPool(4);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong hotAdmitted = new AtomicLong();
    AtomicLong healthyDecisions = new AtomicLong();
    AtomicLong healthyDegraded = new AtomicLong();
    AtomicLong lastHotDegradedAt = new AtomicLong();
    AtomicLong hotDegraded = new AtomicLong();
    try {
      List<Future<?>> load = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int id = t;
        load.add(pool.submit(() -> {
          int i = 0;
          while (!stop.get()) {
            Decision h = limiter.tryAcquire(hot);
            if (h.isDegraded()) {
              hotDegraded.incrementAndGet();
              lastHotDegradedAt.set(System.nanoTime());
            } else if (h.isAllowed()) {
              hotAdmitted.incrementAndGet();
            }
            Decision c = limiter.tryAcquire(healthy.get((id * 13 + i++) % healthy.size()));
            healthyDecisions.incrementAndGet();
            if (c.isDegraded()) {
              healthyDegraded.incrementAndGet();
            }
          }
        }));
      }
      waitFor(() -> hotAdmitted.get() > 500, Duration.ofSeconds(20), "load against the live cluster");
      assertThat(hotDegraded.get()).isZero();

      ProcessHandle.of(pid).orElseThrow().destroyForcibly();      // SIGKILL
      long killedAt = System.nanoTime();
      int survivor = ports.stream().filter(p -> p != victim).findFirst().orElseThrow();
      waitFor(() -> {
        int owner = masterOf(hotSlot, survivor);
        return owner > 0 && owner != victim;
      }, Duration.ofSeconds(30), "the cluster to promote the replica");
      long promotedAt = System.nanoTime();
      waitFor(() -> hotDegraded.get() > 0, Duration.ofSeconds(5), "the hot key to notice");
      // recovered: no degraded hot decision for a whole second
      waitFor(() -> System.nanoTime() - lastHotDegradedAt.get() > TimeUnit.SECONDS.toNanos(1),
          Duration.ofSeconds(30), "decisions on the hot key to recover");
      long recoveredAt = lastHotDegradedAt.get();
      double failoverSeconds = (promotedAt - killedAt) / 1e9;
      double afterPromotion = (recoveredAt - promotedAt) / 1e9;
      System.out.printf("cluster failover: replica promoted %.2f s after SIGKILL; hot key degraded"
          + " until %.2f s after the promotion; %d degraded hot decisions; healthy shards: %d"
          + " decisions, %d degraded%n", failoverSeconds, afterPromotion, hotDegraded.get(),
          healthyDecisions.get(), healthyDegraded.get());
      assertThat(afterPromotion).as("recovery after the cluster promoted the replica, seconds")
          .isLessThan(2.0);
      assertThat(healthyDegraded.get()).as("keys on healthy shards are never degraded").isZero();

      stop.set(true);
      for (Future<?> f : load) {
        f.get(10, TimeUnit.SECONDS);
      }
      // acknowledged writes lost in the failover (Redis replicates asynchronously): measured
      Decision level = limiter.check(hot);
      long leaked = (System.nanoTime() - started) / 1_000_000_000L;
      long held = Math.round(1e7 - level.remaining());
      System.out.printf("hot key: %d admitted, %d held after the failover (about %d leaked): about"
          + " %d acknowledged charges lost%n", hotAdmitted.get(), held, leaked,
          Math.max(0, hotAdmitted.get() - held - leaked));
      assertThat(held).as("never more charges than were admitted").isLessThanOrEqualTo(hotAdmitted.get());

      // a store can be built while the dead node is the first seed
      List<String> deadFirst = new ArrayList<>();
      deadFirst.add("redis://127.0.0.1:" + victim);
      for (String s : seeds) {
        if (!s.endsWith(":" + victim)) {
          deadFirst.add(s);
        }
      }
      try (RedisStore again = RedisStore.clusterBuilder(deadFirst.toArray(new String[0]))
          .prefix("failover:").build()) {
        RateLimiter l2 = Sluice.builder().limit(Limit.leakyBucket(10, Rate.perSecond(1)))
            .store(again).build();
        assertThat(l2.tryAcquire("after").isDegraded()).isFalse();
      }
    } finally {
      stop.set(true);
      pool.shutdownNow();
      store.close();
    }
  }

  private static void waitFor(java.util.function.BooleanSupplier condition, Duration timeout,
      String what) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for " + what);
      }
      Thread.sleep(20);   // polling real servers, not timing the test
    }
  }
}

package dev.sluice.redis;

import dev.sluice.LeaseSettings;
import dev.sluice.LeaseStats;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * One JVM of {@link RedisFleetProcessesTest}: {@code instances} fleet-mode limiters, each with
 * its own connection, one caller thread each, on one hot key in the window the test opens once
 * every JVM is ready ({@link WorkerJvms}); prints what it admitted and what its leases did, one
 * line per limiter.
 */
public final class FleetWorker {
  private FleetWorker() {}

  public static void main(String[] args) throws Exception {
    String uri = args[0];
    String prefix = args[1];
    int instances = Integer.parseInt(args[2]);
    int fleet = Integer.parseInt(args[3]);
    List<RedisStore> stores = new ArrayList<>();
    List<RateLimiter> limiters = new ArrayList<>();
    for (int i = 0; i < instances; i++) {
      // a cold JVM on a busy host may take more than the default 10 s to load the script
      RedisStore store = RedisStore.builder(uri).prefix(prefix)
          .commandTimeout(Duration.ofSeconds(2)).startupTimeout(Duration.ofSeconds(60)).build();
      stores.add(store);
      limiters.add(Sluice.builder().limit(Limit.leakyBucket(200, Rate.perSecond(2000))).store(store)
          .leases(LeaseSettings.defaults().withExcessShare(0.1).withInstances(fleet)).build());
    }
    long[] window = WorkerJvms.window();   // every JVM is built: the load starts together
    long start = window[0];
    long end = window[1];
    List<Thread> threads = new ArrayList<>();
    List<AtomicLong> admitted = new ArrayList<>();
    for (RateLimiter l : limiters) {
      AtomicLong mine = new AtomicLong();
      admitted.add(mine);
      Thread t = new Thread(() -> {
        while (System.currentTimeMillis() < start) {
          LockSupport.parkNanos(1_000_000);   // the JVMs start the load together
        }
        while (System.currentTimeMillis() < end) {
          LockSupport.parkNanos(200_000);   // pacing the load
          if (l.tryAcquire("hot").isAllowed()) {
            mine.incrementAndGet();
          }
        }
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    for (int i = 0; i < limiters.size(); i++) {
      RateLimiter l = limiters.get(i);
      l.close();
      LeaseStats s = l.stats().leases();
      System.out.printf("admitted=%d granted=%d spent=%d returned=%d held=%d stranded=%d errors=%d%n",
          admitted.get(i).get(), s.unitsGranted(), (long) s.unitsSpent(), s.unitsReturned(),
          s.unitsHeld(), s.unitsStranded(), l.stats().storeErrors());
    }
    for (RedisStore s : stores) {
      s.close();
    }
  }
}

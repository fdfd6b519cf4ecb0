package dev.sluice.benchmarks;

import dev.sluice.server.Options;
import dev.sluice.server.SluiceServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import redis.embedded.RedisServer;

/**
 * The service with {@code --redis} on a saturated host and no fault: a real
 * Redis 6.2 on loopback, the service in this JVM with its defaults, 64 HTTP client threads on
 * 100,000 keys, and busy threads spinning on every core beside them. Counts answers by status;
 * a healthy Redis must give no 503.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.BusyHostLoad
 * [seconds=20] [clients=64] [spinners=4] [storeTimeout, e.g. 0.05s; default the service's 250 ms]}
 */
public final class BusyHostLoad {
  private BusyHostLoad() {}

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    int clients = args.length > 1 ? Integer.parseInt(args[1]) : 64;
    int spinners = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    Duration storeTimeout = args.length > 3 ? Duration.parse("PT" + args[3].toUpperCase(Locale.ROOT)) : null;
    int redisPort = LoadHarness.freePort();
    RedisServer redis = RedisServer.newRedisServer().port(redisPort).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    redis.start();
    Path config = Files.createTempFile("busy", ".yaml");
    Files.writeString(config, "policies:\n  big: {algorithm: leaky-bucket, capacity: 1000000, rate: 1000000/s}\n");
    SluiceServer server = SluiceServer.start(new Options().port(0).config(config)
        .redis("redis://127.0.0.1:" + redisPort).storeTimeout(storeTimeout));
    AtomicBoolean stop = new AtomicBoolean();
    Map<Integer, LongAdder> byStatus = new ConcurrentHashMap<>();
    LongAdder failures = new LongAdder();
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    URI uri = URI.create("http://127.0.0.1:" + server.port() + "/v1/check");
    Thread[] threads = new Thread[clients + spinners];
    for (int i = 0; i < spinners; i++) {
      threads[i] = new Thread(() -> {
        long x = 0;
        while (!stop.get()) {
          x += System.nanoTime() % 7;   // keep a core busy
        }
        if (x == 42) {
          System.out.print("");
        }
      });
    }
    for (int i = spinners; i < threads.length; i++) {
      threads[i] = new Thread(() -> {
        while (!stop.get()) {
          String body = "{\"policy\":\"big\",\"key\":\"user:" + ThreadLocalRandom.current().nextInt(100_000) + "\"}";
          try {
            HttpResponse<Void> r = http.send(HttpRequest.newBuilder(uri)
                .POST(HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.discarding());
            byStatus.computeIfAbsent(r.statusCode(), k -> new LongAdder()).increment();
          } catch (Exception e) {
            failures.increment();
          }
        }
      });
    }
    long start = System.nanoTime();
    for (Thread t : threads) {
      t.start();
    }
    Thread.sleep(seconds * 1000L);   // the load runs for this long
    stop.set(true);
    for (Thread t : threads) {
      t.join();
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    long total = byStatus.values().stream().mapToLong(LongAdder::sum).sum();
    Map<Integer, Long> sorted = new TreeMap<>();
    byStatus.forEach((k, v) -> sorted.put(k, v.sum()));
    String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
        + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    System.out.printf(Locale.ROOT, "serve --redis (store timeout %s), no fault, %d clients + %d"
        + " spinning threads on %d cores, %.0f s: %,d answers (%,.0f/s) by status %s, %d client"
        + " errors%n", storeTimeout == null ? "250 ms default" : storeTimeout.toMillis() + " ms",
        clients, spinners,
        Runtime.getRuntime().availableProcessors(), elapsed, total, total / elapsed, sorted,
        failures.sum());
    metrics.lines().filter(l -> l.startsWith("sluice_store_errors_total")
        || l.startsWith("sluice_degraded_decisions_total")).forEach(l -> System.out.println("  " + l));
    server.close();
    redis.stop();
    Files.deleteIfExists(config);
    if (sorted.containsKey(503)) {
      System.exit(1);
    }
  }
}

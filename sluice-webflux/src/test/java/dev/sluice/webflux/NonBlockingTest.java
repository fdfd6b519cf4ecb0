package dev.sluice.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.LimiterStats;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.redis.RedisStore;
import dev.sluice.testkit.Ports;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.http.codec.ServerCodecConfigurer;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import redis.embedded.RedisServer;

/**
 * The WebFlux filter on a real Reactor Netty server, with BlockHound installed: any blocking call
 * on an event-loop thread (a lock wait, a sleep, a socket read) throws there and fails the
 * request. The control proves the check is live: a limiter that blocks is caught.
 */
class NonBlockingTest {
  private static RedisServer redis;
  private static RedisStore store;
  private static final List<Throwable> errors = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    BlockHound.install();
    String external = System.getenv("SLUICE_REDIS_URI");
    String uri = external;
    if (external == null || external.isBlank()) {
      int port = Ports.free();
      redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
          .setting("save \"\"").setting("appendonly no").build();
      redis.start();
      uri = "redis://127.0.0.1:" + port;
    }
    // generous: this test is about threads, not latency (a busy host must not turn it into 503s)
    store = RedisStore.builder(uri).prefix("nonblocking-" + System.nanoTime() + ":")
        .commandTimeout(Duration.ofSeconds(10)).build();
    Sluice.builder().limit(Limit.leakyBucket(1, Rate.perSecond(1))).store(store).build()
        .tryAcquire("warm-up");   // loads the script
  }

  @AfterAll
  static void stop() throws Exception {
    store.close();
    if (redis != null) {
      redis.stop();
    }
  }

  private static DisposableServer serve(RateLimiter limiter) {
    SluiceWebFilter filter = SluiceWebFilter.builder()
        .rule(WebRule.path("/api/**").limiter(limiter).key(WebKeys.header("X-Api-Key")).build())
        .build();
    var handler = WebHttpHandlerBuilder.webHandler(exchange -> exchange.getResponse().setComplete())
        .filter(filter)
        // made here, not lazily on an event loop (Spring reads its codec defaults from a file)
        .codecConfigurer(ServerCodecConfigurer.create())
        .exceptionHandler((exchange, e) -> {
          errors.add(e);
          return Mono.error(e);
        })
        .build();
    return HttpServer.create().host("127.0.0.1").port(0)
        .handle(new ReactorHttpHandlerAdapter(handler)).bindNow();
  }

  private static Map<Integer, Integer> hit(DisposableServer server, String key, int n) {
    HttpClient client = HttpClient.newHttpClient();
    List<CompletableFuture<HttpResponse<String>>> calls = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      calls.add(client.sendAsync(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + server.port() + "/api/x")).header("X-Api-Key", key)
          .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString()));
    }
    Map<Integer, Integer> statuses = new TreeMap<>();
    for (CompletableFuture<HttpResponse<String>> c : calls) {
      statuses.merge(c.join().statusCode(), 1, Integer::sum);
    }
    return statuses;
  }

  @Test
  void decisionsOnRedis_neverBlockAnEventLoop_andAreExact() {
    errors.clear();
    RateLimiter limiter = Sluice.builder().limit(Limit.leakyBucket(20, Rate.perHour(1)))
        .store(store).build();
    DisposableServer server = serve(limiter);
    try {
      Map<Integer, Integer> statuses = hit(server, "k1", 60);
      assertThat(errors).isEmpty();
      assertThat(statuses).containsExactlyEntriesOf(new TreeMap<>(Map.of(200, 20, 429, 40)));
    } finally {
      server.disposeNow();
    }
  }

  @Test
  void decisionsInMemory_neverBlockAnEventLoop_andAreExact() {
    errors.clear();
    RateLimiter limiter = Sluice.builder().limit(Limit.tokenBucket(25, Rate.perHour(1))).build();
    DisposableServer server = serve(limiter);
    try {
      Map<Integer, Integer> statuses = hit(server, "k2", 60);
      assertThat(errors).isEmpty();
      assertThat(statuses).containsExactlyEntriesOf(new TreeMap<>(Map.of(200, 25, 429, 35)));
    } finally {
      server.disposeNow();
    }
  }

  @Test
  void control_aLimiterThatBlocks_isCaughtOnTheEventLoop() {
    errors.clear();
    RateLimiter inner = Sluice.builder().limit(Limit.leakyBucket(5, Rate.perSecond(1))).build();
    RateLimiter blocking = new BlockingLimiter(inner);
    DisposableServer server = serve(blocking);
    try {
      Map<Integer, Integer> statuses = hit(server, "k3", 3);
      assertThat(statuses).containsOnlyKeys(500);
      assertThat(errors).hasSize(3).allMatch(e -> e instanceof BlockingOperationError);
    } finally {
      server.disposeNow();
    }
  }

  /** A limiter whose "asynchronous" decision sleeps on the caller's thread. */
  private record BlockingLimiter(RateLimiter inner) implements RateLimiter {
    @Override
    public CompletableFuture<Decision> tryAcquireAsync(String key, double cost) {
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return inner.tryAcquireAsync(key, cost);
    }

    @Override
    public Decision tryAcquire(String key, double cost) {
      return inner.tryAcquire(key, cost);
    }

    @Override
    public Decision check(String key, double cost) {
      return inner.check(key, cost);
    }

    @Override
    public Decision fillUp(String key, double cost) {
      return inner.fillUp(key, cost);
    }

    @Override
    public Decision reserve(String key, double cost) {
      return inner.reserve(key, cost);
    }

    @Override
    public Decision acquire(String key, double cost, Duration timeout) throws InterruptedException {
      return inner.acquire(key, cost, timeout);
    }

    @Override
    public CompletableFuture<Decision> acquireAsync(String key, double cost, Duration timeout) {
      return inner.acquireAsync(key, cost, timeout);
    }

    @Override
    public void reset(String key) {
      inner.reset(key);
    }

    @Override
    public List<Limit> limits() {
      return inner.limits();
    }

    @Override
    public LimiterStats stats() {
      return inner.stats();
    }
  }
}

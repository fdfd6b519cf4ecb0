package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Envoy's rate limit service API over a real port, driven by a grpc-java client built from the
 * same official definitions Envoy uses, with an envoyproxy/ratelimit configuration file as is.
 */
class EnvoyServiceTest {
  @TempDir
  Path dir;

  private SluiceServer server;
  private ManagedChannel channel;
  private RateLimitServiceGrpc.RateLimitServiceBlockingStub rls;

  @BeforeEach
  void start() throws Exception {
    Path config = dir.resolve("edge.yaml");
    try (var in = getClass().getResourceAsStream("/envoy/edge.yaml")) {
      Files.write(config, in.readAllBytes());
    }
    server = SluiceServer.start(new Options().port(0).grpcPort(0).envoyConfig(config)
        .envoyHeaders("ietf"));
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
    rls = RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.close();
    }
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i])
          .setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  private RateLimitResponse ask(String domain, int hits, RateLimitDescriptor... descriptors) {
    RateLimitRequest.Builder r = RateLimitRequest.newBuilder().setDomain(domain).setHitsAddend(hits);
    for (RateLimitDescriptor d : descriptors) {
      r.addDescriptors(d);
    }
    return rls.shouldRateLimit(r.build());
  }

  private static Map<String, String> headers(RateLimitResponse r) {
    return r.getResponseHeadersToAddList().stream()
        .collect(Collectors.toMap(HeaderValue::getKey, HeaderValue::getValue));
  }

  @Test
  void oneDescriptor_admitsItsLimit_thenOverLimit_withTheHttpApisHeaders() {
    for (int i = 0; i < 3; i++) {
      RateLimitResponse r = ask("edge", 0, descriptor("remote_address", "10.0.0.1"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      RateLimitResponse.DescriptorStatus s = r.getStatuses(0);
      assertThat(s.getCode()).isEqualTo(Code.OK);
      assertThat(s.getCurrentLimit().getRequestsPerUnit()).isEqualTo(3);
      assertThat(s.getCurrentLimit().getUnit()).isEqualTo(RateLimitResponse.RateLimit.Unit.HOUR);
      assertThat(s.getLimitRemaining()).as("hits_addend 0 counts 1").isEqualTo(2 - i);
      assertThat(headers(r)).containsKeys("RateLimit-Policy", "RateLimit")
          .doesNotContainKey("Retry-After");
    }
    RateLimitResponse over = ask("edge", 0, descriptor("remote_address", "10.0.0.1"));
    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getDurationUntilReset().getSeconds()).isBetween(3590L, 3600L);
    assertThat(headers(over).get("Retry-After")).isEqualTo("1200");
    assertThat(ask("edge", 0, descriptor("remote_address", "10.0.0.2")).getOverallCode())
        .as("each value of a key without a value has its own bucket").isEqualTo(Code.OK);
  }

  @Test
  void severalDescriptors_eachDecidedOnItsOwn_overallOverIfAnyIs() {
    RateLimitResponse first = ask("edge", 1, descriptor("remote_address", "10.0.0.9"),
        descriptor("path", "/login"));
    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    RateLimitResponse second = ask("edge", 1, descriptor("remote_address", "10.0.0.9"),
        descriptor("path", "/login"));
    assertThat(second.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(second.getStatuses(0).getCode()).isEqualTo(Code.OK);
    assertThat(second.getStatuses(0).getLimitRemaining()).as("charged though the other was over")
        .isEqualTo(1);
    assertThat(second.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(headers(second)).containsKey("Retry-After");
  }

  @Test
  void hitsAddend_chargesThatMany_andADescriptorsOwnWins() {
    RateLimitResponse r = ask("edge", 3, descriptor("remote_address", "10.0.1.1"));
    assertThat(r.getStatuses(0).getLimitRemaining()).isZero();
    assertThat(ask("edge", 1, descriptor("remote_address", "10.0.1.1")).getOverallCode())
        .isEqualTo(Code.OVER_LIMIT);
    RateLimitDescriptor own = descriptor("remote_address", "10.0.1.2").toBuilder()
        .setHitsAddend(com.google.protobuf.UInt64Value.of(2)).build();
    assertThat(ask("edge", 3, own).getStatuses(0).getLimitRemaining()).isEqualTo(1);
    assertThat(ask("edge", 4, descriptor("remote_address", "10.0.1.3")).getOverallCode())
        .as("more than the whole limit at once").isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void unknownDomainOrDescriptor_unlimited_shadowAndZero_asEnvoysServerAnswers() {
    RateLimitResponse unknown = ask("nope", 1, descriptor("remote_address", "1.2.3.4"));
    assertThat(unknown.getOverallCode()).isEqualTo(Code.OK);
    assertThat(unknown.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(ask("edge", 1, descriptor("user", "x")).getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(ask("edge", 1, descriptor("remote_address", "1.2.3.4", "extra", "y"))
        .getStatuses(0).hasCurrentLimit()).as("the descriptor leaves the tree").isFalse();
    for (int i = 0; i < 5; i++) {
      RateLimitResponse r = ask("edge", 1, descriptor("path", "/static/app.js"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(0).hasCurrentLimit()).as("unlimited").isFalse();
    }
    for (int i = 0; i < 4; i++) {
      RateLimitResponse r = ask("edge", 1, descriptor("tenant", "acme", "plan", "free"));
      assertThat(r.getOverallCode()).as("shadow mode never rejects (request %s)", i)
          .isEqualTo(Code.OK);
      assertThat(r.getStatuses(0).getCurrentLimit().getName()).isEqualTo("free-plan");
      assertThat(r.getStatuses(0).getLimitRemaining()).isEqualTo(Math.max(0, 1 - i));
    }
    assertThat(ask("edge", 1, descriptor("path", "/api/v1/users/7/edit")).getStatuses(0)
        .getLimitRemaining()).isEqualTo(99);
    assertThat(ask("edge", 1, descriptor("path", "/api/v2/users/8/edit")).getStatuses(0)
        .getLimitRemaining()).as("share_threshold: one counter for every match").isEqualTo(98);
    RateLimitResponse banned = ask("edge", 1, descriptor("banned", "me"));
    assertThat(banned.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(banned.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isZero();
  }

  @Test
  void malformedRequests_areInvalidArgument_oddDescriptorsAreDecided_andHealthIsServing() {
    assertThatThrownBy(() -> ask("", 1, descriptor("remote_address", "1.2.3.4")))
        .isInstanceOf(StatusRuntimeException.class)
        .satisfies(e -> assertThat(((StatusRuntimeException) e).getStatus().getCode())
            .isEqualTo(Status.Code.INVALID_ARGUMENT))
        .hasMessageContaining("rate limit domain must not be empty");
    assertThatThrownBy(() -> ask("edge", 1))
        .hasMessageContaining("rate limit descriptor list must not be empty");
    RateLimitResponse odd = ask("edge", 1, descriptor("remote_address", "10.9.9.9"),
        RateLimitDescriptor.getDefaultInstance(), descriptor("remote_address", "bad\u0000value"),
        descriptor("remote_address", "v".repeat(2_000)));
    assertThat(odd.getStatuses(0).getLimitRemaining()).isEqualTo(2);
    assertThat(odd.getStatuses(1).hasCurrentLimit()).as("no entries: no limit, as ratelimit")
        .isFalse();
    assertThat(odd.getStatuses(2).getLimitRemaining()).as("a U+0000 is limited too").isEqualTo(2);
    assertThat(odd.getStatuses(3).getLimitRemaining()).as("so is a value over 1,024 bytes")
        .isEqualTo(2);
    HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
    for (String service : new String[] {"", "ratelimit"}) {
      assertThat(health.check(HealthCheckRequest.newBuilder().setService(service).build())
          .getStatus()).as("service '%s', as envoyproxy/ratelimit registers it", service)
          .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    }
  }

  @Test
  void malformedProtobuf_isInvalidArgument_countedAndLoggedOnceInOneLine() throws Exception {
    io.grpc.MethodDescriptor.Marshaller<byte[]> raw = new io.grpc.MethodDescriptor.Marshaller<>() {
      @Override
      public java.io.InputStream stream(byte[] value) {
        return new java.io.ByteArrayInputStream(value);
      }

      @Override
      public byte[] parse(java.io.InputStream stream) {
        try {
          return stream.readAllBytes();
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    };
    io.grpc.MethodDescriptor<byte[], byte[]> garbage = io.grpc.MethodDescriptor
        .<byte[], byte[]>newBuilder().setType(io.grpc.MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName())
        .setRequestMarshaller(raw).setResponseMarshaller(raw).build();
    java.util.List<java.util.logging.LogRecord> logged =
        java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    java.util.logging.Handler capture = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord r) {
        if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
          logged.add(r);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
    root.addHandler(capture);
    try {
      for (int i = 0; i < 50; i++) {
        assertThatThrownBy(() -> io.grpc.stub.ClientCalls.blockingUnaryCall(channel, garbage,
            io.grpc.CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS),
            new byte[] {(byte) 0xff, (byte) 0xff, 0x01, 0x02}))
            .isInstanceOf(StatusRuntimeException.class)
            .satisfies(e -> assertThat(((StatusRuntimeException) e).getStatus().getCode())
                .isEqualTo(Status.Code.INVALID_ARGUMENT));
      }
    } finally {
      root.removeHandler(capture);
    }
    assertThat(logged).as("one line for 50 malformed requests, without a stack trace")
        .singleElement().satisfies(r -> {
          assertThat(r.getThrown()).isNull();
          assertThat(r.getMessage()).contains("was not a valid RateLimitRequest");
        });
    assertThat(metrics()).contains("sluice_envoy_malformed_requests_total 50");
    assertThat(ask("edge", 1, descriptor("remote_address", "10.7.7.7")).getOverallCode())
        .as("the service still answers").isEqualTo(Code.OK);
  }

  @Test
  void badConfiguration_isRefusedWithFileAndLine() throws Exception {
    Path bad = dir.resolve("bad.yaml");
    Files.writeString(bad, String.join("\n",
        "domain: d",
        "descriptors:",
        "  - key: a",
        "    rate_limit: {unit: fortnight, requests_per_unit: 5}",
        "  - key: b",
        "    rate_limit: {unit: second, requests_per_unit: -1}",
        "    colour: red",
        "  - key: c",
        "    rate_limit: {unit: second, requests_per_unit: 5}",
        "    sluice: {algorithm: leaky}", ""));
    assertThatThrownBy(() -> EnvoyConfig.load(bad, 1_000_000_000L))
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactly(
            bad + ":4: d.a: invalid rate limit unit 'fortnight' (expected second, minute, hour,"
                + " day, week, month or year)",
            bad + ":6: d.b: 'requests_per_unit' must be a whole number from 0 to 4294967295 (the"
                + " wire's uint32) but was '-1'",
            bad + ":7: d.b: config error, unknown key 'colour' (expected one of"
                + " descriptors, detailed_metric, key, metadata, policy, quota_mode, rate_limit,"
                + " shadow_mode, share_threshold, sluice, value, value_to_metric)",
            bad + ":9: d.c: unknown algorithm 'leaky' (expected leaky-bucket, token-bucket, gcra,"
                + " fixed-window or sliding-window)"));
    assertThatThrownBy(() -> SluiceServer.start(new Options().port(0).grpcPort(0)))
        .hasMessageContaining("needs descriptors: give --envoy-config, or an 'envoy' section in"
            + " the policies file");
  }

  @Test
  void reload_keepsUnchangedLimits_appliesNewOnes_andKeepsTheOldOnABadFile() throws Exception {
    Path config = dir.resolve("edge.yaml");
    ask("edge", 2, descriptor("remote_address", "10.0.2.1"));
    assertThat(ask("edge", 1, descriptor("user", "u1")).getStatuses(0).hasCurrentLimit()).isFalse();
    Files.writeString(config, String.join("\n",
        "domain: edge",
        "descriptors:",
        "  - key: remote_address",
        "    rate_limit: {unit: hour, requests_per_unit: 3}",
        "  - key: user",
        "    rate_limit: {unit: hour, requests_per_unit: 1}", ""));
    server.reloadEnvoy();
    RateLimitResponse kept = ask("edge", 1, descriptor("remote_address", "10.0.2.1"));
    assertThat(kept.getStatuses(0).getLimitRemaining()).as("an unchanged limit keeps its state")
        .isZero();
    assertThat(ask("edge", 1, descriptor("user", "u1")).getOverallCode()).isEqualTo(Code.OK);
    assertThat(ask("edge", 1, descriptor("user", "u1")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(ask("edge", 1, descriptor("path", "/login")).getStatuses(0).hasCurrentLimit())
        .as("removed").isFalse();
    Files.writeString(config, "domain: edge\ndescriptors:\n  - value: no-key\n");
    assertThatThrownBy(() -> server.reloadEnvoy()).isInstanceOf(ConfigException.class)
        .hasMessageContaining(":3: edge.<descriptor>: descriptor has empty key");
    assertThat(ask("edge", 1, descriptor("user", "u2")).getStatuses(0).hasCurrentLimit())
        .as("the previous configuration stays").isTrue();
    assertThat(metrics()).contains("sluice_config_reloads_total{result=\"ok\"} 1",
        "sluice_config_reloads_total{result=\"error\"} 1");
  }

  @Test
  void metrics_perDomainAndOutcome_andPerDescriptorWithDetailedMetric() throws Exception {
    ask("edge", 1, descriptor("remote_address", "10.0.3.1"));
    ask("edge", 1, descriptor("banned", "x"));
    ask("other", 1, descriptor("remote_address", "10.0.3.1"));
    for (int i = 0; i < 3; i++) {
      ask("edge", 1, descriptor("tenant", "t", "plan", "free"));
    }
    assertThat(metrics()).contains(
        "sluice_envoy_descriptors_total{domain=\"edge\",outcome=\"ok\"} 3",
        "sluice_envoy_descriptors_total{domain=\"edge\",outcome=\"over_limit\"} 1",
        "sluice_envoy_descriptors_total{domain=\"edge\",outcome=\"shadow_over_limit\"} 1",
        "sluice_envoy_descriptors_total{domain=\"unknown\",outcome=\"no_limit\"} 1",
        "sluice_envoy_descriptor_decisions_total{domain=\"edge\",descriptor=\"edge.tenant.plan_free\","
            + "outcome=\"ok\"} 2",
        "sluice_envoy_descriptor_decisions_total{domain=\"edge\",descriptor=\"edge.tenant.plan_free\","
            + "outcome=\"shadow_over_limit\"} 1");
  }

  private String metrics() throws Exception {
    return java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + server.port() + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString()).body();
  }

  @Test
  void limitOverrides_applyByDefault_exceptWhereANodeOptsOut() {
    RateLimitDescriptor.RateLimitOverride oneAnHour = RateLimitDescriptor.RateLimitOverride
        .newBuilder().setRequestsPerUnit(1).setUnit(io.envoyproxy.envoy.type.v3.RateLimitUnit.HOUR).build();
    RateLimitDescriptor key = descriptor("api_key", "k1").toBuilder().setLimit(oneAnHour).build();
    RateLimitResponse first = ask("edge", 1, key);
    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(1);
    assertThat(first.getStatuses(0).getCurrentLimit().getName()).as("as ratelimit: no name")
        .isEmpty();
    assertThat(ask("edge", 1, key).getOverallCode()).as("the override's 1 an hour")
        .isEqualTo(Code.OVER_LIMIT);
    assertThat(ask("edge", 1, descriptor("api_key", "k1")).getStatuses(0).getLimitRemaining())
        .as("without the override: the configured 100, a bucket of its own").isEqualTo(99);
    RateLimitDescriptor address = descriptor("remote_address", "10.0.4.1").toBuilder()
        .setLimit(oneAnHour).build();
    RateLimitResponse ignored = ask("edge", 1, address);
    assertThat(ignored.getStatuses(0).getCurrentLimit().getRequestsPerUnit())
        .as("remote_address says sluice: {overrides: false}").isEqualTo(3);
    RateLimitDescriptor unknownUnit = descriptor("api_key", "k2").toBuilder().setLimit(
        oneAnHour.toBuilder().setUnit(io.envoyproxy.envoy.type.v3.RateLimitUnit.UNKNOWN)).build();
    assertThat(ask("edge", 1, unknownUnit).getStatuses(0).getCurrentLimit().getRequestsPerUnit())
        .as("an override without a unit is ignored").isEqualTo(100);
  }

  @Test
  void settings_reachTheService_asRatelimitsEnvironmentVariablesDo() throws Exception {
    Path conf = dir.resolve("conf");
    Files.createDirectories(conf);
    Files.writeString(conf.resolve("a.yaml"), "domain: m\ndescriptors:\n  - key: a\n"
        + "    metadata: {team: one}\n    rate_limit: {unit: minute, requests_per_unit: 1}\n");
    Files.writeString(conf.resolve("b.yaml"), "domain: m\ndescriptors:\n  - key: b\n"
        + "    rate_limit: {unit: minute, requests_per_unit: 5}\n");
    assertThatThrownBy(() -> SluiceServer.start(new Options().port(0).grpcPort(0)
        .envoyConfig(conf))).hasMessageContaining("duplicate domain 'm' in config file");
    try (SluiceServer s = SluiceServer.start(new Options().port(0).grpcPort(0).envoyConfig(conf)
        .envoyMergeDomains(true).envoyAlgorithm("fixed-window").envoyShadowMode(true)
        .envoyHeaders("ratelimit").envoyResponseMetadata(true).envoyOverrides(false))) {
      ManagedChannel c = NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext()
          .build();
      try {
        RateLimitServiceGrpc.RateLimitServiceBlockingStub stub = RateLimitServiceGrpc
            .newBlockingStub(c).withDeadlineAfter(10, TimeUnit.SECONDS);
        RateLimitDescriptor a = descriptor("a", "x").toBuilder().setLimit(
            RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(50)
                .setUnit(io.envoyproxy.envoy.type.v3.RateLimitUnit.MINUTE)).build();
        RateLimitRequest both = RateLimitRequest.newBuilder().setDomain("m").addDescriptors(a)
            .addDescriptors(descriptor("b", "y")).build();
        stub.shouldRateLimit(both);
        RateLimitResponse r = stub.shouldRateLimit(both);
        assertThat(r.getStatuses(0).getCurrentLimit().getRequestsPerUnit())
            .as("merged domain; overrides off").isEqualTo(1);
        assertThat(r.getStatuses(0).getCode()).as("fixed-window: the second hit is over")
            .isEqualTo(Code.OVER_LIMIT);
        assertThat(r.getOverallCode()).as("global shadow mode").isEqualTo(Code.OK);
        assertThat(headers(r)).containsEntry("RateLimit-Limit", "1")
            .containsEntry("RateLimit-Remaining", "0");
        assertThat(r.getDynamicMetadata().getFieldsOrThrow("domain").getStringValue())
            .isEqualTo("m");
      } finally {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
    try (SluiceServer s = SluiceServer.start(new Options().port(0).grpcPort(0).envoyConfig(conf)
        .envoyMergeDomains(true).envoyQuotaMode(true))) {
      ManagedChannel c = NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext()
          .build();
      try {
        RateLimitServiceGrpc.RateLimitServiceBlockingStub stub = RateLimitServiceGrpc
            .newBlockingStub(c).withDeadlineAfter(10, TimeUnit.SECONDS);
        RateLimitRequest both = RateLimitRequest.newBuilder().setDomain("m")
            .addDescriptors(descriptor("a", "q")).addDescriptors(descriptor("b", "q")).build();
        stub.shouldRateLimit(both);
        RateLimitResponse r = stub.shouldRateLimit(both);
        assertThat(r.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
        assertThat(r.getOverallCode()).as("global quota mode: not every descriptor is over")
            .isEqualTo(Code.OK);
      } finally {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void policiesFile_envoySection_holdsDescriptorsToItsPolicies() throws Exception {
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, String.join("\n",
        "policies:",
        "  api:",
        "    limits:",
        "      - {algorithm: token-bucket, capacity: 2, rate: 90/1m}",
        "      - {algorithm: sliding-window, limit: 1000, window: 1h}",
        "envoy:",
        "  - domain: shop",
        "    descriptors:",
        "      - key: user",
        "        policy: api",
        "      - key: path",
        "        value: /cart",
        "        rate_limit: {unit: minute, requests_per_unit: 1}", ""));
    try (SluiceServer s = SluiceServer.start(new Options().port(0).grpcPort(0).config(policies))) {
      ManagedChannel c = NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext()
          .build();
      try {
        RateLimitServiceGrpc.RateLimitServiceBlockingStub stub = RateLimitServiceGrpc
            .newBlockingStub(c).withDeadlineAfter(10, TimeUnit.SECONDS);
        RateLimitRequest user = RateLimitRequest.newBuilder().setDomain("shop")
            .addDescriptors(descriptor("user", "u1")).build();
        RateLimitResponse first = stub.shouldRateLimit(user);
        assertThat(first.getOverallCode()).isEqualTo(Code.OK);
        assertThat(first.getStatuses(0).getCurrentLimit().getName()).isEqualTo("api");
        assertThat(first.getResponseHeadersToAddList()).as("no headers by default, as ratelimit")
            .isEmpty();
        assertThat(first.getStatuses(0).getCurrentLimit().getRequestsPerUnit())
            .as("90 a minute is 1.5 a second: shown per minute").isEqualTo(90);
        assertThat(first.getStatuses(0).getCurrentLimit().getUnit())
            .isEqualTo(RateLimitResponse.RateLimit.Unit.MINUTE);
        assertThat(stub.shouldRateLimit(user).getOverallCode()).isEqualTo(Code.OK);
        assertThat(stub.shouldRateLimit(user).getOverallCode()).as("the policy's burst of 2")
            .isEqualTo(Code.OVER_LIMIT);
        RateLimitRequest cart = RateLimitRequest.newBuilder().setDomain("shop")
            .addDescriptors(descriptor("path", "/cart")).build();
        assertThat(stub.shouldRateLimit(cart).getOverallCode()).isEqualTo(Code.OK);
        assertThat(stub.shouldRateLimit(cart).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      } finally {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
    Files.writeString(policies, String.join("\n",
        "policies:",
        "  api: {algorithm: leaky-bucket, capacity: 2, rate: 1/s}",
        "envoy:",
        "  - domain: shop",
        "    descriptors:",
        "      - {key: user, policy: nope}", ""));
    assertThatThrownBy(() -> Policies.load(policies))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining(":6: shop.user: no policy 'nope' (the file has [api])");
  }
}

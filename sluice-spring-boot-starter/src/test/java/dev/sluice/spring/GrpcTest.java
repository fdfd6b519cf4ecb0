package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.grpc.SluiceClientInterceptor;
import dev.sluice.grpc.SluiceServerInterceptor;
import io.grpc.CallOptions;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * gRPC in the starter (docs/grpc.md, "With Spring Boot"): the server interceptor built from
 * sluice.grpc.server.rules over the policies' limiters, on a real Netty server; the client
 * interceptor from sluice.grpc.client with its meters; every bad setting named at startup.
 */
class GrpcTest {
  private static final MethodDescriptor.Marshaller<String> STRING =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
          return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
          try {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
  private static final MethodDescriptor<String, String> SAY = MethodDescriptor
      .<String, String>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName("test.Echo/Say").setRequestMarshaller(STRING)
      .setResponseMarshaller(STRING).build();

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class,
          SluiceGrpcAutoConfiguration.class))
      .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
      .withPropertyValues("sluice.store.type=memory",
          "sluice.policies.api.algorithm=leaky-bucket", "sluice.policies.api.capacity=2",
          "sluice.policies.api.rate=1/1h", "sluice.concurrency.limits.db.limit=4");

  @Test
  void theServerInterceptor_fromYaml_refusesOnARealServer() throws Exception {
    runner.withPropertyValues("sluice.grpc.server.rules[0].policy=api",
        "sluice.grpc.server.rules[0].key=metadata:x-api-key",
        "sluice.grpc.server.rules[1].limit=db", "sluice.grpc.server.rules[1].methods=test.Echo/*")
        .run(context -> {
          assertThat(context).hasNotFailed();
          SluiceServerInterceptor limits = context.getBean(SluiceServerInterceptor.class);
          Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(ServerInterceptors.intercept(ServerServiceDefinition
                  .builder("test.Echo").addMethod(SAY, ServerCalls.asyncUnaryCall(
                      (String m, io.grpc.stub.StreamObserver<String> out) -> {
                        out.onNext(m);
                        out.onCompleted();
                      })).build(), limits)).build().start();
          ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
              .usePlaintext().build();
          try {
            Metadata h = new Metadata();
            h.put(Metadata.Key.of("x-api-key", Metadata.ASCII_STRING_MARSHALLER), "acme");
            var c = ClientInterceptors.intercept(channel,
                MetadataUtils.newAttachHeadersInterceptor(h));
            CallOptions o = CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS);
            assertThat(ClientCalls.blockingUnaryCall(c, SAY, o, "1")).isEqualTo("1");
            assertThat(ClientCalls.blockingUnaryCall(c, SAY, o, "2")).isEqualTo("2");
            assertThatThrownBy(() -> ClientCalls.blockingUnaryCall(c, SAY, o, "3"))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                  assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                  assertThat(e.getStatus().getDescription()).startsWith("rate limit 'api'");
                });
            assertThat(context.getBean(SluiceLimiters.class).concurrency("db").stats().acquired())
                .as("the concurrency rule took a permit for each admitted call").isEqualTo(2);
            assertThat(context.getBean(MeterRegistry.class).find("sluice.decisions")
                .tag("limiter", "api").tag("outcome", "rejected").counter().count())
                .as("the policy's meters count the interceptor's decisions").isEqualTo(1);
          } finally {
            channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
          }
        });
  }

  @Test
  void theClientInterceptor_fromYaml_withItsMeters() {
    runner.run(context -> assertThat(context.getBeanProvider(SluiceClientInterceptor.class)
        .getIfAvailable()).as("off by default").isNull());
    runner.withPropertyValues("sluice.grpc.client.throttle.enabled=true",
        "sluice.grpc.client.retry-budget.enabled=true", "sluice.grpc.client.retry-budget.ratio=0.2")
        .run(context -> {
          assertThat(context.getBean(SluiceClientInterceptor.class)).isNotNull();
          MeterRegistry meters = context.getBean(MeterRegistry.class);
          assertThat(meters.find("sluice.grpc.retries").tag("result", "allowed")
              .functionCounter()).isNotNull();
          assertThat(meters.find("sluice.grpc.retry.budget.available").gauge().value())
              .as("the floor: 10/s x 10 s").isEqualTo(100);
          assertThat(meters.find("sluice.grpc.throttle.reject.probability").gauge().value())
              .isZero();
        });
  }

  @Test
  void badGrpcSettings_failStartup_eachNamed() {
    runner.withPropertyValues("sluice.grpc.server.rules[0].policy=nope",
        "sluice.grpc.server.rules[1].limit=db", "sluice.grpc.server.rules[1].key=cookie",
        "sluice.grpc.server.rules[2].policy=api", "sluice.grpc.server.rules[2].limit=db",
        "sluice.grpc.server.rules[3].policy=api", "sluice.grpc.server.rules[3].methods=Orders",
        "sluice.grpc.client.retry-budget.enabled=true",
        "sluice.grpc.client.retry-budget.ratio=50")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause()
              .hasMessageContaining("sluice.grpc.server.rules[0].policy: no policy 'nope'")
              .hasMessageContaining("sluice.grpc.server.rules[1].key: must be method, service,"
                  + " peer, metadata:NAME or global but was 'cookie'")
              .hasMessageContaining("sluice.grpc.server.rules[2]: name a policy (a rate rule)"
                  + " or a limit (a concurrency rule), one of them")
              .hasMessageContaining("sluice.grpc.server.rules[3].methods: methods must be a"
                  + " full method name");
        });
    runner.withPropertyValues("sluice.grpc.client.retry-budget.enabled=true",
        "sluice.grpc.client.retry-budget.ratio=50").run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause().hasMessageContaining(
              "sluice.grpc.client.retry-budget: ratio must be between 0 and 10 but was 50.0");
        });
  }

  /** docs/grpc.md's YAML makes both interceptors, as it says. */
  @Test
  void theYamlOfGrpcMd_makesBothInterceptors() throws Exception {
    var source = DocYaml.block("grpc.md", "sluice:\n  policies:");
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class,
            SluiceGrpcAutoConfiguration.class))
        .withPropertyValues("sluice.store.type=memory")
        .withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(source))
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(SluiceServerInterceptor.class)).isNotNull();
          assertThat(context.getBean(SluiceClientInterceptor.class)).isNotNull();
        });
  }
}

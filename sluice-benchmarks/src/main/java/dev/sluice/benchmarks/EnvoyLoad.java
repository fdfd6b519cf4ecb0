package dev.sluice.benchmarks;

import dev.sluice.server.Options;
import dev.sluice.server.SluiceServer;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Envoy's {@code ShouldRateLimit} over gRPC against the HTTP API's {@code /v1/check}, the same
 * service process and the same limit (a leaky bucket so large that everything is admitted), on
 * one hot key and on 100,000 keys, from closed-loop Java callers on loopback: grpc-java blocking
 * stubs over one HTTP/2 channel, and the JDK's HttpClient (HTTP/1.1, one connection per caller).
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.EnvoyLoad
 * [seconds]}. With {@code --body FILE} it writes one framed gRPC request for
 * {@code sluice-benchmarks/http/grpc.sh}, which drives both APIs with native load generators.
 */
public final class EnvoyLoad {
  private EnvoyLoad() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("--body")) {
      // one ShouldRateLimit request as gRPC frames it (for h2load, grpc.sh): a flag byte 0, the
      // length in 4 bytes big-endian, the protobuf message
      byte[] message = RateLimitRequest.newBuilder().setDomain("load").addDescriptors(
          RateLimitDescriptor.newBuilder().addEntries(RateLimitDescriptor.Entry.newBuilder()
              .setKey("user").setValue("hot"))).build().toByteArray();
      java.nio.ByteBuffer framed = java.nio.ByteBuffer.allocate(5 + message.length);
      framed.put((byte) 0).putInt(message.length).put(message);
      Files.write(Path.of(args[1]), framed.array());
      return;
    }
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    Path dir = Files.createTempDirectory("sluice-envoy-load");
    Path envoy = dir.resolve("load.yaml");
    Files.writeString(envoy, String.join("\n", "domain: load", "descriptors:", "  - key: user",
        "    rate_limit: {unit: second, requests_per_unit: 1000000000}", ""));
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, String.join("\n", "policies:",
        "  load: {algorithm: leaky-bucket, capacity: 1000000000, rate: 1000000000/s}", ""));
    System.out.printf(Locale.ROOT, "sluice serve in this JVM, %d s per run, %d cores%n", seconds,
        Runtime.getRuntime().availableProcessors());
    try (SluiceServer server = SluiceServer.start(new Options().port(0).grpcPort(0)
        .envoyConfig(envoy).config(policies).maximumKeys(200_000).maxThreads(64))) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort())
          .usePlaintext().build();
      RateLimitServiceGrpc.RateLimitServiceBlockingStub rls =
          RateLimitServiceGrpc.newBlockingStub(channel);
      URI check = URI.create("http://127.0.0.1:" + server.port() + "/v1/check");
      ThreadLocal<HttpClient> clients = ThreadLocal.withInitial(() -> HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1).build());
      LoadHarness.header();
      for (int keys : new int[] {1, 100_000}) {
        RateLimitRequest[] requests = new RateLimitRequest[keys];
        String[] bodies = new String[keys];
        for (int i = 0; i < keys; i++) {
          requests[i] = RateLimitRequest.newBuilder().setDomain("load").addDescriptors(
              RateLimitDescriptor.newBuilder().addEntries(RateLimitDescriptor.Entry.newBuilder()
                  .setKey("user").setValue("u" + i))).build();
          bodies[i] = "{\"policy\":\"load\",\"key\":\"u" + i + "\"}";
        }
        for (int callers : new int[] {1, 16, 64}) {
          LoadHarness.run("grpc", keys, callers, seconds, k -> rls.shouldRateLimit(requests[k])
              .getOverallCodeValue() == 1);
          LoadHarness.run("http", keys, callers, seconds, k -> {
            try {
              return clients.get().send(HttpRequest.newBuilder(check)
                  .POST(HttpRequest.BodyPublishers.ofString(bodies[k])).build(),
                  HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          });
        }
      }
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}

package dev.sluice.cli;

import dev.sluice.StoreFailure;
import dev.sluice.server.ConfigException;
import dev.sluice.server.SluiceServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code sluice serve}: the standalone rate-limit service. */
@Command(name = "serve", mixinStandardHelpOptions = true,
    description = {"Runs the rate-limit service: POST /v1/check, GET /healthz, /readyz, /metrics.",
        "Without --config it serves the bundled sample policies (demo, api, jobs)."})
final class ServeCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = "--config", paramLabel = "FILE", description = "policies (YAML); reloaded when it changes")
  Path config;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "address to bind (default: ${DEFAULT-VALUE})")
  String host;

  @Option(names = "--port", defaultValue = "8080", description = "port (default: ${DEFAULT-VALUE}; 0: any free)")
  int port;

  @Option(names = "--redis", paramLabel = "URI", description = "share limits through Redis (redis://host:6379)")
  String redis;

  @Option(names = "--redis-cluster", paramLabel = "URI", split = ",",
      description = "share limits through a Redis Cluster (seed URIs, comma-separated)")
  java.util.List<String> redisCluster;

  @Option(names = "--postgres", paramLabel = "JDBC-URL",
      description = "share limits through PostgreSQL (jdbc:postgresql://host/db?user=...&password=...)")
  String postgres;

  @Option(names = "--store-failure", defaultValue = "closed", paramLabel = "closed|open|fallback",
      description = "what requests get while a shared store fails (default: ${DEFAULT-VALUE})")
  String storeFailure;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "require 'Authorization: Bearer <token>' on /v1/ (token read from FILE; or set SLUICE_TOKEN)")
  Path tokenFile;

  @Option(names = "--max-body", defaultValue = "65536", description = "largest body in bytes (default: ${DEFAULT-VALUE})")
  int maxBody;

  @Option(names = "--max-batch", defaultValue = "100", description = "most requests per batch (default: ${DEFAULT-VALUE})")
  int maxBatch;

  @Option(names = "--max-key-length", defaultValue = "256", description = "longest key (default: ${DEFAULT-VALUE})")
  int maxKeyLength;

  @Override
  public Integer call() throws Exception {
    try {
      return serve();
    } catch (InputException e) {
      spec.commandLine().getErr().println("sluice serve: " + e.getMessage());
      return 2;
    } catch (java.io.IOException | IllegalStateException e) {
      spec.commandLine().getErr().println("sluice serve: " + e.getMessage());
      return 1;
    }
  }

  private int serve() throws Exception {
    if ((redis != null ? 1 : 0) + (redisCluster != null ? 1 : 0) + (postgres != null ? 1 : 0) > 1) {
      throw new InputException("choose one of --redis, --redis-cluster and --postgres");
    }
    StoreFailure failure = switch (storeFailure) {
      case "closed" -> StoreFailure.FAIL_CLOSED;
      case "open" -> StoreFailure.FAIL_OPEN;
      case "fallback" -> StoreFailure.FALLBACK_IN_MEMORY;
      default -> throw new InputException("--store-failure must be closed, open or fallback but was '"
          + storeFailure + "'");
    };
    String token = System.getenv("SLUICE_TOKEN");
    if (tokenFile != null) {
      token = Files.readString(tokenFile).trim();
    }
    SluiceServer.Options o;
    try {
      o = new SluiceServer.Options().host(host).port(port).config(config).redis(redis)
          .redisCluster(redisCluster).postgres(postgres).storeFailure(failure)
          .token(token == null || token.isEmpty() ? null : token)
          .maxBodyBytes(maxBody).maxBatch(maxBatch).maxKeyLength(maxKeyLength)
          .reloadEvery(Duration.ofSeconds(2));
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    SluiceServer server;
    try {
      server = SluiceServer.start(o);
    } catch (ConfigException e) {
      throw new InputException("the configuration is not valid:\n" + e.getMessage());
    }
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "sluice-shutdown"));
    String store = redis != null ? "Redis" : redisCluster != null ? "Redis Cluster"
        : postgres != null ? "PostgreSQL" : "memory";
    spec.commandLine().getErr().printf("sluice: listening on http://%s:%d (store: %s, policies: %s from %s)%n",
        host.contains(":") ? "[" + host + "]" : host, server.port(), store,
        String.join(", ", server.policyNames()), server.configSource());
    spec.commandLine().getErr().printf("try:   curl -i -X POST http://%s:%d/v1/check -d '{\"policy\":\"demo\",\"key\":\"alice\"}'%n",
        host.contains(":") ? "[" + host + "]" : host, server.port());
    spec.commandLine().getErr().flush();
    server.join();
    return 0;
  }
}

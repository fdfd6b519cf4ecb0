package dev.sluice.server;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Envoy's configuration: read at start from {@code --envoy-config} and the policies file's
 * {@code envoy:} section, and read again when either changes. A valid configuration applies to
 * the next request (limits that did not change keep their state); an invalid one is counted and
 * logged, and the previous one stays.
 */
final class EnvoyReloader {
  private static final System.Logger LOG = System.getLogger(EnvoyReloader.class.getName());

  private final Path path;
  private final EnvoyConfig.Settings settings;
  /** The policies file's {@code envoy:} section now in force, or null. */
  private final Supplier<EnvoyConfig> section;
  private final Metrics metrics;
  private EnvoyService envoy;
  private volatile long stamp;

  EnvoyReloader(Options options, Supplier<EnvoyConfig> section, Metrics metrics) {
    this.path = options.envoyConfig;
    this.settings = new EnvoyConfig.Settings(SharedStore.ticksPerSecond(options),
        options.envoyAlgorithm, options.envoyMergeDomains);
    this.section = section;
    this.metrics = metrics;
    this.stamp = stamp();
  }

  /**
   * The configuration now: the files' merged with the policies file's section.
   *
   * @throws ConfigException if it is invalid, or there is none at all
   */
  EnvoyConfig load() throws ConfigException {
    EnvoyConfig config = read();
    if (config == null) {
      throw new ConfigException(List.of("--grpc-port serves Envoy's rate limit service, which"
          + " needs descriptors: give --envoy-config, or an 'envoy' section in the policies"
          + " file"));
    }
    for (String w : config.warnings()) {
      LOG.log(System.Logger.Level.WARNING, w);
    }
    return config;
  }

  private EnvoyConfig read() throws ConfigException {
    return EnvoyConfig.merge(path == null ? null : EnvoyConfig.load(path, settings), section.get());
  }

  /** The service that reloads apply to. */
  void serve(EnvoyService envoy) {
    this.envoy = envoy;
  }

  /** Reads the configuration again now; counts the result and throws an invalid one's problems. */
  void reload() throws ConfigException {
    try {
      EnvoyConfig next = read();
      envoy.reload(next == null ? EnvoyConfig.none() : next);
    } catch (ConfigException e) {
      metrics.reloadsFailed.increment();
      throw e;
    }
    metrics.reloadsOk.increment();
  }

  /** After the policies file reloaded: its {@code envoy:} section may have changed. */
  void reloadLogged() {
    try {
      reload();
    } catch (ConfigException e) {
      LOG.log(System.Logger.Level.WARNING, "the Envoy configuration was not reloaded with the"
          + " policies, the previous one stays: {0}", String.join("; ", e.problems()));
    }
  }

  /** Reloads when the files' names, modification times or sizes changed. */
  void reloadIfChanged() {
    long s = stamp();
    if (s == stamp) {
      return;
    }
    stamp = s;
    try {
      reload();
      LOG.log(System.Logger.Level.INFO, "reloaded {0}", path);
    } catch (ConfigException e) {
      LOG.log(System.Logger.Level.WARNING, "{0} not reloaded, the previous configuration stays: {1}",
          path, String.join("; ", e.problems()));
    }
  }

  /** Modification times and sizes of the configuration's files; -1 if unreadable. */
  private long stamp() {
    if (path == null) {
      return 0;
    }
    try (Stream<Path> files = Files.isDirectory(path) ? Files.list(path) : Stream.of(path)) {
      long stamp = 17;
      for (Path f : (Iterable<Path>) files.sorted()::iterator) {
        stamp = stamp * 31 + f.getFileName().toString().hashCode();
        stamp = stamp * 31 + Files.getLastModifiedTime(f).toMillis();
        stamp = stamp * 31 + Files.size(f);
      }
      return stamp;
    } catch (IOException e) {
      return -1;
    }
  }
}

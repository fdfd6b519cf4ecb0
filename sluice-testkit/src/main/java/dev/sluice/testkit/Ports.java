package dev.sluice.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Ports for the real servers tests start on loopback.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class Ports {
  private Ports() {}

  /** Where {@link #free} looks: below Linux's ephemeral range, apart from the clusters' ports. */
  private static final int LOW = 2_000;
  private static final int HIGH = 12_000;
  private static final Random RANDOM = new Random();

  /**
   * A port that was free on this machine a moment ago, below the range the system gives client
   * sockets (Linux's ephemeral range, 32,768 up: read from {@code ip_local_port_range}), so that
   * a server a test stops and starts again on it finds it free: while the server is down no
   * client socket of this machine (a store client reconnecting to it, above all, which could
   * connect to itself) and no server another test asks the system for ({@code new
   * ServerSocket(0)}) can take it. Picked at random from 2,000 to 11,999 (the Redis Cluster
   * ports of {@link #forRedisCluster} lie above); where the ephemeral range starts lower than
   * that, the system picks.
   */
  public static int free() {
    if (ephemeralStart() > HIGH) {
      for (int attempt = 0; attempt < 1000; attempt++) {
        int port = LOW + RANDOM.nextInt(HIGH - LOW);
        if (bindable(port)) {
          return port;
        }
      }
    }
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port", e);
    }
  }

  /** The first port of the system's ephemeral range (Linux's default where it cannot be read). */
  private static int ephemeralStart() {
    try {
      String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
      int end = 0;
      while (end < range.length() && Character.isDigit(range.charAt(end))) {
        end++;
      }
      return Integer.parseInt(range.substring(0, end));
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }

  /**
   * {@code n} ports for the nodes of a Redis Cluster: each node also listens on its port +
   * 10,000 (the cluster bus), so both must be free. They are taken below Linux's ephemeral range
   * (32,768 up), where no client socket of this machine can take them between this check and the
   * servers' start; an ephemeral port's bus port could be taken, leaving the cluster down.
   */
  public static List<Integer> forRedisCluster(int n) {
    List<Integer> ports = new ArrayList<>();
    Random random = RANDOM;
    for (int attempt = 0; ports.size() < n && attempt < 1000; attempt++) {
      int port = 12_000 + random.nextInt(10_000);     // bus port 22,000 to 31,999
      if (!ports.contains(port) && bindable(port) && bindable(port + 10_000)) {
        ports.add(port);
      }
    }
    if (ports.size() < n) {
      throw new IllegalStateException("found only " + ports.size() + " of " + n
          + " free port pairs for a Redis Cluster");
    }
    return ports;
  }

  private static boolean bindable(int port) {
    try (ServerSocket s = new ServerSocket(port)) {
      return s.isBound();
    } catch (IOException e) {
      return false;
    }
  }
}

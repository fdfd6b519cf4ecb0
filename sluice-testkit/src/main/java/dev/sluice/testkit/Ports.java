package dev.sluice.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Ports for the real servers tests start on loopback. */
public final class Ports {
  private Ports() {}

  /** A port that was free on this machine a moment ago. */
  public static int free() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port", e);
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
    Random random = new Random();
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

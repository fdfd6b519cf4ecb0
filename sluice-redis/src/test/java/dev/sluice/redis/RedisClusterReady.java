package dev.sluice.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * Waits until every node of a freshly started Redis Cluster says {@code cluster_state:ok}.
 * A cluster whose slots are assigned can still answer CLUSTERDOWN for a moment while its nodes
 * agree; tests that start deciding then see a store failure. Plain RESP over a socket, so the
 * test kit needs no Redis client.
 */
public final class RedisClusterReady {
  private RedisClusterReady() {}

  /** Polls {@code CLUSTER INFO} on each loopback port until all are ok, or fails after {@code timeout}. */
  public static void await(List<Integer> ports, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int port : ports) {
      String last = "";
      while (!(last = clusterInfo(port)).contains("cluster_state:ok")) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("Redis Cluster node on port " + port + " not ready after "
              + timeout + ": " + last.lines().findFirst().orElse("no answer"));
        }
        try {
          Thread.sleep(50);   // polling a server's readiness, not timing a test
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for the Redis Cluster", e);
        }
      }
    }
  }

  private static String clusterInfo(int port) {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(2_000);
      OutputStream out = s.getOutputStream();
      out.write("*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      StringBuilder header = new StringBuilder();
      for (int c = in.read(); c != '\n' && c != -1; c = in.read()) {
        header.append((char) c);
      }
      if (header.length() < 2 || header.charAt(0) != '$') {
        return header.toString().trim();
      }
      int length = Integer.parseInt(header.substring(1).trim());
      return new String(in.readNBytes(length), StandardCharsets.US_ASCII);
    } catch (IOException | RuntimeException e) {
      return e.toString();
    }
  }
}

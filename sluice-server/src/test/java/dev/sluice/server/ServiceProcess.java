package dev.sluice.server;

import java.nio.file.Path;

/**
 * A service instance in a JVM of its own, for tests across processes: {@code redisUri} and the
 * policies file; prints {@code port=N} once it listens, and stops when its standard input ends.
 */
public final class ServiceProcess {
  private ServiceProcess() {}

  public static void main(String[] args) throws Exception {
    try (SluiceServer s = SluiceServer.start(new Options().port(0).redis(args[0])
        .config(Path.of(args[1])))) {
      System.out.println("port=" + s.port());
      System.out.flush();
      while (System.in.read() >= 0) {
        // until the test closes our input
      }
    }
  }
}

package dev.sluice.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

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
}

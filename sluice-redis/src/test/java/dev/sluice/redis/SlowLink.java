package dev.sluice.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A TCP relay on a free loopback port to a server, whose answers reach the client {@code delay}
 * milliseconds after the server sent them (a slow link, or a client host too busy to read them
 * sooner); the delay can change while connections are open. For tests.
 */
final class SlowLink implements AutoCloseable {
  private final ServerSocket listening;
  private final int upstream;
  volatile long delayMillis;

  SlowLink(int upstreamPort, long delayMillis) throws IOException {
    this.upstream = upstreamPort;
    this.delayMillis = delayMillis;
    this.listening = new ServerSocket();
    listening.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    daemon(this::accept, "slow-link-accept");
  }

  int port() {
    return listening.getLocalPort();
  }

  String uri() {
    return "redis://127.0.0.1:" + port();
  }

  private void accept() {
    try {
      while (true) {
        Socket client = listening.accept();
        Socket server = new Socket(InetAddress.getLoopbackAddress(), upstream);
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        daemon(() -> copy(client, server, false), "slow-link-up");
        daemon(() -> copy(server, client, true), "slow-link-down");
      }
    } catch (IOException closed) {
      // the link is closed
    }
  }

  /** Copies from one socket to the other, each chunk {@code delayMillis} late if {@code slow}. */
  private void copy(Socket from, Socket to, boolean slow) {
    LinkedBlockingQueue<Object[]> chunks = new LinkedBlockingQueue<>();
    if (slow) {
      daemon(() -> {
        try {
          OutputStream out = to.getOutputStream();
          while (true) {
            Object[] c = chunks.take();
            long due = (long) c[0] + TimeUnit.MILLISECONDS.toNanos(delayMillis);
            long left = due - System.nanoTime();
            if (left > 0) {
              TimeUnit.NANOSECONDS.sleep(left);
            }
            out.write((byte[]) c[1]);
            out.flush();
          }
        } catch (IOException | InterruptedException e) {
          closeQuietly(from, to);
        }
      }, "slow-link-late");
    }
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      byte[] buffer = new byte[16_384];
      for (int n; (n = in.read(buffer)) >= 0; ) {
        if (slow) {
          chunks.add(new Object[] {System.nanoTime(), Arrays.copyOf(buffer, n)});
        } else {
          out.write(buffer, 0, n);
          out.flush();
        }
      }
    } catch (IOException e) {
      // a side closed
    }
    closeQuietly(from, to);
  }

  private static void closeQuietly(Socket... sockets) {
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException e) {
        // best effort
      }
    }
  }

  private static void daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    listening.close();
  }
}

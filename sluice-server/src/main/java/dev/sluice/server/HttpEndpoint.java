package dev.sluice.server;

import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Jetty, set up for a service that faces the network: a bounded thread pool, connections capped
 * at {@link Options#maxConnections}, idle ones closed after {@link Options#idleTimeout}, a head
 * that trickles in for longer than {@link Options#requestTimeout} closed ({@link SlowHeads}),
 * no server version or date header, and a graceful stop that lets requests in flight finish
 * within {@link Options#shutdownGrace}. Once the stop begins, a connection silent for
 * {@link Options#shutdownIdleTimeout} (1 s) is closed, even with a request under way on it.
 */
final class HttpEndpoint {
  private final Server server;
  private final ServerConnector connector;
  private final GracefulHandler graceful;

  HttpEndpoint(Options options, Handler handler, ErrorHandler errors) {
    QueuedThreadPool threads = new QueuedThreadPool(options.maxThreads, 8);
    threads.setName("sluice-http");
    this.server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    http.setIdleTimeout(options.idleTimeout.toMillis());
    this.connector = new ServerConnector(server, new HttpConnectionFactory(http));
    connector.setHost(options.host);
    connector.setPort(options.port);
    connector.setIdleTimeout(options.idleTimeout.toMillis());
    connector.setShutdownIdleTimeout(
        Math.min(options.shutdownIdleTimeout.toMillis(), options.idleTimeout.toMillis()));
    connector.addBean(new SlowHeads(options.requestTimeout.toMillis(), connector));
    server.addConnector(connector);
    server.addBean(new NetworkConnectionLimit(options.maxConnections, connector));
    server.setErrorHandler(errors);
    this.graceful = new GracefulHandler(handler);
    server.setHandler(graceful);
    server.setStopTimeout(options.shutdownGrace.toMillis());
  }

  void start() throws Exception {
    server.start();
  }

  boolean isStarted() {
    return server.isStarted();
  }

  /** Stops accepting, then waits up to the shutdown grace for requests in flight. */
  void stop() throws Exception {
    server.stop();
  }

  void join() throws InterruptedException {
    server.join();
  }

  int port() {
    return connector.getLocalPort();
  }

  long requestsInFlight() {
    return graceful.getCurrentRequestCount();
  }

  boolean isShuttingDown() {
    return graceful.isShutdown();
  }
}

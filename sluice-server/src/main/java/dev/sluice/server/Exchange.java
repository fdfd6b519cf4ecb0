package dev.sluice.server;

import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/** One request's answer, sent at most once: by the handler or by the request deadline. */
final class Exchange {
  final Request request;
  final Response response;
  final Callback callback;
  final AtomicBoolean answered = new AtomicBoolean();
  /** When the request must have arrived whole (System.nanoTime), counted from its first byte. */
  long deadlineNanos;

  private final Set<Exchange> waiting;

  Exchange(Request request, Response response, Callback callback, Set<Exchange> waiting) {
    this.request = request;
    this.response = response;
    this.callback = callback;
    this.waiting = waiting;
  }

  boolean claim() {
    if (!answered.compareAndSet(false, true)) {
      return false;
    }
    waiting.remove(this);
    return true;
  }
}

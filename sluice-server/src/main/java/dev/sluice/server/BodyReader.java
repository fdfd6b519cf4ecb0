package dev.sluice.server;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Reads request bodies without holding a thread, under each request's deadline: a body still on
 * its way when the deadline passes is answered 408 by a sweep every {@value #SWEEP_MILLIS} ms.
 * Requests whose body came with their head are never watched, so the common path schedules
 * nothing per request.
 */
final class BodyReader implements AutoCloseable {
  static final long SWEEP_MILLIS = 50;

  private final Responses responses;
  private final long requestTimeoutMillis;
  /** Requests whose body is still arriving, watched for their deadline. */
  private final Set<Exchange> waiting = ConcurrentHashMap.newKeySet();
  private ScheduledExecutorService sweeper;

  BodyReader(Responses responses, long requestTimeoutMillis) {
    this.responses = responses;
    this.requestTimeoutMillis = requestTimeoutMillis;
  }

  /** An exchange for this request, whose deadline this reader watches while its body arrives. */
  Exchange exchange(Request request, Response response, Callback callback) {
    return new Exchange(request, response, callback, waiting);
  }

  /** Starts the sweep of late bodies. */
  void start() {
    sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "sluice-request-deadlines");
      t.setDaemon(true);
      return t;
    });
    // sweep() catches what an answer can throw: the schedule never ends by an exception
    var unused = sweeper.scheduleWithFixedDelay(this::sweep, SWEEP_MILLIS, SWEEP_MILLIS,
        TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
  }

  /**
   * Reads the body of at most {@code max} bytes as its chunks arrive, under the request's
   * deadline (counted from its first byte), then hands it, or the failure, to {@code done}; not
   * at all if the deadline answered first. A body longer than {@code max} fails with
   * {@link TooLarge}.
   */
  void read(Exchange x, int max, BiConsumer<byte[], Throwable> done) {
    x.deadlineNanos = x.request.getBeginNanoTime()
        + TimeUnit.MILLISECONDS.toNanos(requestTimeoutMillis);
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.min(max, 1024));
    BiConsumer<byte[], Throwable> unlessLate = (body, failure) -> {
      if (!x.answered.get()) {
        done.accept(body, failure);
      }
    };
    new Runnable() {
      private boolean waited;

      @Override
      public void run() {
        while (true) {
          Content.Chunk chunk = x.request.read();
          if (chunk == null) {
            if (!waited) {
              waited = true;
              waiting.add(x);   // a body still on its way is watched
            }
            x.request.demand(this);
            return;
          }
          if (Content.Chunk.isFailure(chunk)) {
            unlessLate.accept(null, chunk.getFailure());
            return;
          }
          ByteBuffer b = chunk.getByteBuffer();
          if (out.size() + b.remaining() > max) {
            chunk.release();
            unlessLate.accept(null, new TooLarge());
            return;
          }
          byte[] bytes = new byte[b.remaining()];
          b.get(bytes);
          out.write(bytes, 0, bytes.length);
          chunk.release();
          if (chunk.isLast()) {
            unlessLate.accept(out.toByteArray(), null);
            return;
          }
        }
      }
    }.run();
  }

  /** Answers 408 to every request whose body is still on its way past its deadline. */
  private void sweep() {
    long now = System.nanoTime();
    for (Exchange x : waiting) {
      if (now - x.deadlineNanos >= 0 && x.claim()) {
        try {
          x.response.getHeaders().put(HttpHeader.CONNECTION, "close");
          responses.sendProblem(x, 408, Problem.HTTP, "the request did not arrive within "
              + requestTimeoutMillis + " ms");
        } catch (RuntimeException e) {
          // the connection is gone; the next late body is still answered
        }
      }
    }
  }

  /** The body grew past the limit while it was read. */
  static final class TooLarge extends Exception {
    private static final long serialVersionUID = 1L;

    TooLarge() {
      super(null, null, false, false);
    }
  }
}

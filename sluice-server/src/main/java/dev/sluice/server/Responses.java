package dev.sluice.server;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * Response writing: every answer of the service is sent here, once per exchange (the first of
 * the handler and the request deadline wins), and counted by status; Jetty's own refusals become
 * problem documents too.
 */
final class Responses {
  private final Metrics metrics;
  private final ObjectMapper json;

  Responses(Metrics metrics, ObjectMapper json) {
    this.metrics = metrics;
    this.json = json;
  }

  @FunctionalInterface
  interface JsonWriter {
    void write(JsonGenerator g) throws IOException;
  }

  void json(Exchange x, int status, String type, JsonWriter w) {
    json(x, status, type, w, null);
  }

  /**
   * As {@link #json(Exchange, int, String, JsonWriter)}; {@code undelivered} (when not null) runs
   * once if the answer does not reach the client: another answer was sent first (the request's
   * deadline, a shutdown), or writing it failed (the client went away).
   */
  void json(Exchange x, int status, String type, JsonWriter w, Runnable undelivered) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = json.getFactory().createGenerator(out)) {
      w.write(g);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (!x.claim()) {
      if (undelivered != null) {
        undelivered.run();
      }
      return;
    }
    Callback callback = undelivered == null ? x.callback : Callback.from(x.callback::succeeded,
        failure -> {
          undelivered.run();
          x.callback.failed(failure);
        });
    send(x, status, type, out.toByteArray(), callback);
  }

  void text(Exchange x, int status, String body, String type) {
    if (x.claim()) {
      send(x, status, type, body.getBytes(StandardCharsets.UTF_8));
    }
  }

  void problem(Exchange x, int status, Problem p, String detail) {
    if (x.claim()) {
      sendProblem(x, status, p, detail);
    }
  }

  void sendProblem(Exchange x, int status, Problem p, String detail) {
    if (status == 401) {
      x.response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer");
    }
    send(x, status, Problem.MEDIA_TYPE, p.document(status, detail));
  }

  void send(Exchange x, int status, String type, byte[] body) {
    send(x, status, type, body, x.callback);
  }

  private void send(Exchange x, int status, String type, byte[] body, Callback callback) {
    metrics.response(status);
    x.response.setStatus(status);
    x.response.getHeaders().put(HttpHeader.CONTENT_TYPE, type);
    x.response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
    x.response.write(true, ByteBuffer.wrap(body), callback);
  }

  /** Jetty's own refusals (bad framing, 414, 431, 417, 505 ...) as problem+json too. */
  ErrorHandler errorHandler() {
    return new ProblemErrorHandler();
  }

  private final class ProblemErrorHandler extends ErrorHandler {
    // Jetty 12.0 still answers a request it could not parse through this method (its
    // replacement is not in 12.0): the body of 400, 414, 417, 431, 505.
    @Override
    @SuppressWarnings("removal")
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
      metrics.response(status);
      fields.put(HttpHeader.CONTENT_TYPE, Problem.MEDIA_TYPE);
      return ByteBuffer.wrap(Problem.HTTP.document(status, reason == null || reason.isBlank()
          ? HttpStatus.getMessage(status) : reason));
    }

    @Override
    protected void generateResponse(Request request, Response response, int code, String message,
        Throwable cause, Callback callback) {
      metrics.response(code);
      byte[] body = Problem.HTTP.document(code, message == null || message.isBlank()
          ? HttpStatus.getMessage(code) : message);
      response.getHeaders().put(new HttpField(HttpHeader.CONTENT_TYPE, Problem.MEDIA_TYPE));
      response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
      response.write(true, ByteBuffer.wrap(body), callback);
    }
  }
}

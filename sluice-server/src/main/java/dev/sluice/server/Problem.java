package dev.sluice.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.eclipse.jetty.http.HttpStatus;

/**
 * The kinds of problem the service answers with, as RFC 9457 problem details
 * ({@code application/problem+json}). Sluice's own kinds have a {@code type} URI of their own,
 * {@code urn:sluice:problem:<name>}, and their own title; a plain HTTP refusal (401, 404, 405, 408,
 * 413, and Jetty's own 400, 414, 417, 431, 505 ...) has {@code type} {@code about:blank} and the
 * status phrase as its title, as the RFC asks.
 */
enum Problem {
  MALFORMED_JSON(400, "malformed-json", "Malformed JSON"),
  INVALID_CHECK(400, "invalid-check", "Invalid check"),
  UNKNOWN_POLICY(400, "unknown-policy", "Unknown policy"),
  BATCH_TOO_LARGE(400, "batch-too-large", "Batch too large"),
  RATE_LIMITED(429, "rate-limited", "Rate limited"),
  INVALID_PERMIT_REQUEST(400, "invalid-permit-request", "Invalid permit request"),
  UNKNOWN_LIMIT(400, "unknown-limit", "Unknown concurrency limit"),
  NO_PERMIT(429, "no-permit", "No permit"),
  UNKNOWN_PERMIT(404, "unknown-permit", "Unknown permit"),
  STORE_UNAVAILABLE(503, "store-unavailable", "Store unavailable"),
  SHEDDING(503, "shedding", "Shedding load"),
  /** Any other status: about:blank with the status phrase. */
  HTTP(0, null, null);

  static final String MEDIA_TYPE = "application/problem+json";
  private static final JsonFactory JSON = new JsonFactory();

  final int status;
  private final String name;
  private final String title;

  Problem(int status, String name, String title) {
    this.status = status;
    this.name = name;
    this.title = title;
  }

  String type() {
    return name == null ? "about:blank" : "urn:sluice:problem:" + name;
  }

  String title(int status) {
    return title != null ? title : HttpStatus.getMessage(status);
  }

  /** Writes {@code type}, {@code title}, {@code status}, {@code detail}, then the extension members. */
  void write(JsonGenerator g, int status, String detail) throws IOException {
    g.writeStringField("type", type());
    g.writeStringField("title", title(status));
    g.writeNumberField("status", status);
    g.writeStringField("detail", detail);
  }

  /** A whole problem document with no extension members. */
  byte[] document(int status, String detail) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(160);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      write(g, status, detail);
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}

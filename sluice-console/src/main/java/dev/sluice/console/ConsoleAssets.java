package dev.sluice.console;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The console's page: {@code index.html}, {@code console.js}, {@code console.css} and {@code
 * favicon.svg}, read from this jar once (no CDN: the page works on a closed network). The page
 * loads its assets by relative paths; where it reads its data and sets quotas is written into
 * the page ({@link #page(Settings)}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-console">docs/server.md, "The console"</a>.
 */
public final class ConsoleAssets {
  /**
   * What the page may load and run: its own assets, its own API, nothing inline. The page also
   * carries it (a {@code meta} element, without {@code frame-ancestors}), so that it holds where
   * the server cannot send headers.
   */
  public static final String CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self';"
      + " style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none';"
      + " form-action 'none'; frame-ancestors 'none'";
  private static final Map<String, byte[]> ASSETS = load();

  private ConsoleAssets() {}

  /**
   * Where the page reads and writes, relative to the page (or absolute paths).
   *
   * @param data the console's document ({@code GET})
   * @param quotas the quotas ({@code PUT} or {@code POST}, {@code DELETE})
   * @param token true: the page asks for an admin token and sends it as a bearer token; false:
   *     the server's own authentication applies (Actuator's security)
   * @param flatQuotas true: a quota is sent with {@code POST} as one flat object, one limit's
   *     fields at the top (Actuator's endpoint); false: {@code PUT} with a {@code limits} array
   */
  public record Settings(String data, String quotas, boolean token, boolean flatQuotas) {
    public Settings {
      Objects.requireNonNull(data, "data");
      Objects.requireNonNull(quotas, "quotas");
    }
  }

  private static Map<String, byte[]> load() {
    Map<String, byte[]> out = new LinkedHashMap<>();
    for (String name : new String[] {"index.html", "console.js", "console.css", "favicon.svg"}) {
      try (InputStream in = ConsoleAssets.class.getResourceAsStream(name)) {
        if (in == null) {
          throw new IllegalStateException("the console's asset " + name + " is missing from the"
              + " jar");
        }
        out.put(name, in.readAllBytes());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return out;
  }

  /** True when {@code name} is one of the page's assets ({@code index.html} and the rest). */
  public static boolean isAsset(String name) {
    return ASSETS.containsKey(name);
  }

  /** An asset's bytes ({@code index.html} as it ships: see {@link #page(Settings)}). */
  public static byte[] asset(String name) {
    byte[] b = ASSETS.get(name);
    if (b == null) {
      throw new IllegalArgumentException("no console asset '" + name + "' (there are "
          + ASSETS.keySet() + ")");
    }
    return b.clone();
  }

  /** An asset's media type. */
  public static String contentType(String name) {
    return name.endsWith(".html") ? "text/html; charset=utf-8"
        : name.endsWith(".js") ? "text/javascript; charset=utf-8"
        : name.endsWith(".svg") ? "image/svg+xml" : "text/css; charset=utf-8";
  }

  /** The page, telling its script where to read and write. */
  public static byte[] page(Settings s) {
    String html = new String(ASSETS.get("index.html"), StandardCharsets.UTF_8);
    String meta = "<meta name=\"sluice-console\" data-data=\"" + attribute(s.data())
        + "\" data-quotas=\"" + attribute(s.quotas()) + "\" data-auth=\""
        + (s.token() ? "token" : "server") + "\" data-quota-api=\""
        + (s.flatQuotas() ? "flat" : "limits") + "\">";
    html = html.replace("<meta name=\"sluice-console\">", meta);
    return html.getBytes(StandardCharsets.UTF_8);
  }

  private static String attribute(String v) {
    return v.replace("&", "&amp;").replace("\"", "&quot;").replace("<", "&lt;");
  }
}

package dev.sluice.servlet;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Which key a request is limited under: a client address, an API key, a user. Returns null when
 * the request has no key; the filter's {@link dev.sluice.http.MissingKey} rule decides what happens then.
 * {@link Keys} has the usual ones.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 */
@FunctionalInterface
public interface KeyResolver {
  /** The key, or null if this request has none. */
  String key(HttpServletRequest request);
}

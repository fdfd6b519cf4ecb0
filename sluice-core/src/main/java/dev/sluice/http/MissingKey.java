package dev.sluice.http;

/**
 * What an HTTP filter does with a request that has no rate-limit key.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 */
public enum MissingKey {
  /** 400 with a problem+json body that says the key is missing (the default). */
  REJECT,
  /** Passes unlimited. */
  ALLOW,
  /** Limited under one key, {@code shared:no-key}, shared by every request without a key. */
  SHARED
}

package dev.sluice.servlet;

/** What a request without a key gets. */
public enum MissingKey {
  /** 400 with a problem+json body that says the key is missing (the default). */
  REJECT,
  /** Passes unlimited. */
  ALLOW,
  /** Limited under one key shared by every request without a key. */
  SHARED
}

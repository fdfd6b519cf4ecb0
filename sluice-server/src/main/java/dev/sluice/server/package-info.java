/**
 * The standalone rate-limit service behind {@code sluice serve}: policies from a YAML file,
 * decisions over HTTP/JSON, on the in-memory store, Redis or PostgreSQL. An application module,
 * not a library API.
 */
package dev.sluice.server;

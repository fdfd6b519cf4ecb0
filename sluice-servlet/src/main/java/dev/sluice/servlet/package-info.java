/**
 * A Jakarta Servlet filter that limits requests by rule and answers 429 with {@code Retry-After}
 * and the RateLimit headers. See {@link dev.sluice.servlet.SluiceFilter}.
 */
package dev.sluice.servlet;

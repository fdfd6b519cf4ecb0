/**
 * HTTP conventions shared by the servlet filter and the service: the {@code RateLimit} and
 * {@code Retry-After} headers of a decision.
 */
package dev.sluice.http;

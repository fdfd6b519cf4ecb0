/**
 * Rate limiting for Spring WebFlux without Spring Boot: {@link
 * dev.sluice.webflux.SluiceWebFilter}, a {@code WebFilter} built from {@link
 * dev.sluice.webflux.WebRule}s (a path pattern, methods, a limiter, a key from {@link
 * dev.sluice.webflux.WebKeys}, a cost), answers as the servlet filter does (429 with
 * {@code Retry-After} and the RateLimit header fields, 503 while a store fails closed) and
 * decides without blocking an event loop: store calls go through the limiter's asynchronous
 * methods, queue mode waits on a timer, not a thread. {@link
 * dev.sluice.webflux.SluiceBlockHoundIntegration} tells BlockHound which waits inside Sluice are
 * not blocking. See {@code docs/spring.md}.
 */
package dev.sluice.webflux;

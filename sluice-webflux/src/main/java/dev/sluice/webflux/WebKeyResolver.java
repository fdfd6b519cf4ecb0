package dev.sluice.webflux;

import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Which key a request is limited under: a client address, an API key, a user. An empty
 * {@code Mono} means the request has no key; the filter's {@link dev.sluice.http.MissingKey} rule
 * decides what happens then. {@link WebKeys} has the usual ones. A resolver must not block.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#webflux">docs/spring.md, "WebFlux"</a>.
 */
@FunctionalInterface
public interface WebKeyResolver {
  /** The key, or an empty {@code Mono} if this request has none. */
  Mono<String> key(ServerWebExchange exchange);
}

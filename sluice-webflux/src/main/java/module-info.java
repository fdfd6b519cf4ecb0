/**
 * The Spring WebFlux filter: 429 with Retry-After and the RateLimit fields, decided without
 * blocking an event loop. Spring and Reactor are automatic modules, named by their manifests;
 * BlockHound is optional (its integration is found by the service loader when it is present).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.webflux {
  requires transitive dev.sluice;
  requires transitive spring.web;
  requires transitive reactor.core;
  requires spring.core;
  requires static reactor.blockhound;

  exports dev.sluice.webflux;

  provides reactor.blockhound.integration.BlockHoundIntegration
      with dev.sluice.webflux.SluiceBlockHoundIntegration;
}

/**
 * Micrometer meters for any Sluice limiter (Micrometer is an automatic module, named by its
 * manifest; its registry is part of this API, hence transitive).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.micrometer {
  requires transitive dev.sluice;
  requires transitive micrometer.core;

  exports dev.sluice.micrometer;
}

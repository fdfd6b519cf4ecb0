/**
 * The Redis store for Sluice, through Lettuce (an automatic module, named by its manifest; its
 * types are part of this API, hence transitive).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.redis {
  requires transitive dev.sluice;
  requires transitive lettuce.core;

  exports dev.sluice.redis;
}

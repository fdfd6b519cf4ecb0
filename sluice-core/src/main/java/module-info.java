/**
 * Sluice core: the limiters, the in-memory store, and the SPI for shared stores. No runtime
 * dependencies.
 */
module dev.sluice {
  exports dev.sluice;
  exports dev.sluice.spi;
  exports dev.sluice.http;
}

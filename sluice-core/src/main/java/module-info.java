/**
 * Sluice core: the limiters, the in-memory store, and the SPI for shared stores. No runtime
 * dependencies.
 */
// the modules of the qualified export are built after this one
@SuppressWarnings("module")
module dev.sluice {
  // the health signals read the JVM's own beans (CPU time, collectors, memory pools)
  requires java.management;
  requires jdk.management;

  exports dev.sluice;
  exports dev.sluice.spi;
  exports dev.sluice.http;
  exports dev.sluice.concurrency;
  exports dev.sluice.health;
  exports dev.sluice.quota;
  // not API: shared by Sluice's own modules
  exports dev.sluice.internal to dev.sluice.servlet, dev.sluice.webflux, dev.sluice.spring,
      dev.sluice.console;
}

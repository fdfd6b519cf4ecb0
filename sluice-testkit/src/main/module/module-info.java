/**
 * Sluice's testkit: the manual clock, the reference models and the suites every store passes.
 * Test code that other modules run, so JUnit, AssertJ, jqwik and Lincheck are its compile
 * dependencies. Lincheck publishes no module name: it is required by the name Java derives from
 * its jar, {@code lincheck.jvm} (Maven's and Gradle's caches both name the jar
 * {@code lincheck-jvm-<version>.jar}). The descriptor is compiled after the testkit's own tests,
 * which run on the class path (Lincheck instruments classes of the unnamed module).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.testkit {
  requires transitive dev.sluice;
  requires transitive org.junit.jupiter.api;
  requires transitive org.assertj.core;
  requires transitive net.jqwik.api;
  requires lincheck.jvm;
  requires static java.logging;
  // Browser (optional: the modules that serve the console add Selenium to their tests)
  requires static transitive org.seleniumhq.selenium.api;
  requires static transitive org.seleniumhq.selenium.chrome_driver;
  requires static transitive org.seleniumhq.selenium.chromium_driver;
  requires static transitive org.seleniumhq.selenium.remote_driver;
  requires static com.google.auto.service;
  requires transitive java.sql;   // CombinedCallsCheck waits on a JDBC connection
  requires java.compiler;   // DocSnippets compiles the docs' Java blocks
  requires transitive java.net.http;   // DocCurl sends the docs' curl calls

  exports dev.sluice.testkit;
  // JUnit, jqwik and Lincheck call the suites' annotated methods reflectively
  opens dev.sluice.testkit;
}

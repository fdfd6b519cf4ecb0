/**
 * The console (docs/server.md, "The console"): its page, whose assets ship in this jar
 * ({@link dev.sluice.console.ConsoleAssets}), and the document it reads once a second
 * ({@link dev.sluice.console.ConsoleHistory}, from a {@link dev.sluice.console.ConsoleSource}).
 * {@code sluice serve} and the Spring Boot starter serve both.
 */
package dev.sluice.console;

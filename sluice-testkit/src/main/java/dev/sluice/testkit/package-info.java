/**
 * What every store must pass: a manual clock, the reference model, the conformance suite, model
 * properties, linearizability checks and golden state vectors generated from core; and for the
 * stores on a server, the restart and pruning suites.
 */
package dev.sluice.testkit;

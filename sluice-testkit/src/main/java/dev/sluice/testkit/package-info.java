/**
 * What every store must pass: a manual clock, the reference model, the conformance suite, model
 * properties, linearizability checks and golden state vectors generated from core.
 */
package dev.sluice.testkit;

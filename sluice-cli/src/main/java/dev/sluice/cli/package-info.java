/**
 * The {@code sluice} command line: simulate traffic against every algorithm, plot bucket levels,
 * and serve the rate-limit service. An application, not a library API.
 */
package dev.sluice.cli;

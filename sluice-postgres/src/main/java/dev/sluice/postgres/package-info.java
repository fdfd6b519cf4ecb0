/**
 * The PostgreSQL store: {@link dev.sluice.postgres.PostgresStore}, one statement per decision on
 * the database clock, with expiry and pruning.
 */
package dev.sluice.postgres;

/**
 * {@link dev.sluice.jdbc.store.JdbcStore}: what Sluice's SQL stores ({@code PostgresStore},
 * {@code MysqlStore}) have in common, their settings included ({@code docs/operations.md}).
 */
package dev.sluice.jdbc.store;

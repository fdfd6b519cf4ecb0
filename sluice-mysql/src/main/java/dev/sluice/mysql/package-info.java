/**
 * The MySQL and MariaDB store: {@link dev.sluice.mysql.MysqlStore} keeps per-key limits, groups,
 * fleet leases and permits in flight in InnoDB tables, each decision one round trip on the
 * database clock: a single bucket's {@code tryAcquire} one statement, anything else one call of a
 * stored procedure.
 */
package dev.sluice.mysql;

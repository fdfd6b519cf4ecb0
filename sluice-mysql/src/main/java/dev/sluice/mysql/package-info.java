/**
 * The MySQL and MariaDB store: {@link dev.sluice.mysql.MysqlStore} keeps per-key limits, groups,
 * fleet leases and permits in flight in InnoDB tables, each decision one call of a stored
 * procedure on the database clock.
 */
package dev.sluice.mysql;

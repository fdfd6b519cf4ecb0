/**
 * Plumbing shared by Sluice's JDBC stores: {@link dev.sluice.jdbc.DeadlineConnections} (a
 * connection by a decision's deadline, whatever the pool's own wait), {@link
 * dev.sluice.jdbc.RecoveryConnections} (decisions while a pool waits out its back-off after an
 * outage), {@link dev.sluice.jdbc.Deadline} and {@link dev.sluice.jdbc.AsyncCalls}. Not API.
 */
package dev.sluice.jdbc;

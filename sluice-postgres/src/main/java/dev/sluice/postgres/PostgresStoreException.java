package dev.sluice.postgres;

import java.sql.SQLException;

/**
 * A decision, reset or pruning that PostgreSQL did not complete; the cause is the driver's
 * {@link java.sql.SQLException}. A limiter's failure policy answers decisions that fail this way.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#postgresql-sluice-postgres">docs/operations.md, "PostgreSQL (sluice-postgres)"</a>.
 */
public final class PostgresStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  PostgresStoreException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The SQLSTATE of the underlying failure, or null. */
  public String sqlState() {
    return getCause() instanceof SQLException e ? e.getSQLState() : null;
  }
}

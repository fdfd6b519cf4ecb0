package dev.sluice.mysql;

/**
 * MySQL or MariaDB failed to decide (a statement error, a timeout); the message says which.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/operations.md#mysql-and-mariadb-sluice-mysql">docs/operations.md, "MySQL and MariaDB (sluice-mysql)"</a>.
 */
public final class MysqlStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  MysqlStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}

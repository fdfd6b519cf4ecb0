package dev.sluice.mysql;

/** MySQL or MariaDB failed to decide (a statement error, a timeout); the message says which. */
public final class MysqlStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  MysqlStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}

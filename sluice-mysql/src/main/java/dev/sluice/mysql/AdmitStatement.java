package dev.sluice.mysql;

import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreRequest;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * The common decision in one statement: a {@code tryAcquire} on one bucket of whole ticks without
 * a penalty ({@link #handles}). One {@code INSERT ... ON DUPLICATE KEY UPDATE}, autocommitted,
 * decides it under the row's lock alone, on the database clock, by the procedure's fast path's
 * rule: a bucket empty at {@code E} holds {@code max(0, E - now)} at {@code now} and admits
 * {@code q} when that plus {@code q} is at most the capacity, and is then empty at {@code
 * max(E, now) + q}; a rejection writes nothing. The state it found comes back in the statement's
 * OK packet through {@code LAST_INSERT_ID(expr)} (the driver's generated key), as {@code E - now
 * + }{@link #BIAS}: no result set, no second round trip, no procedure, no named lock. A row of other limits is left
 * as it is and answered with {@link #OTHER_LIMITS}, and the procedure decides instead.
 *
 * <p>The procedure, which takes the key's named lock and then the row, writes a row it did not
 * find with a plain {@code INSERT}: if this statement inserted the row in between, that fails
 * with a duplicate key, the procedure's transaction rolls back whole and the store decides again.
 */
final class AdmitStatement {
  /**
   * Added to {@code E - now} so that what the statement reports is positive (a state of "none"
   * included); 0 means the statement found no row.
   */
  static final long BIAS = 1L << 62;
  /** Reported for a row of other limits: above any {@code E - now + BIAS}. */
  static final long OTHER_LIMITS = Long.MAX_VALUE;
  /** Reported when the row was had after the time the caller had left: nothing decided. */
  static final long TOO_LATE = Long.MAX_VALUE - 1;

  /** The database clock in microseconds since the epoch, as the procedures read it. */
  private static final String DATABASE_NOW =
      "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

  /**
   * Parameters: {@code :k} the key, {@code :now} the time (the database clock unless a test
   * clock is set; {@code NOW()} and {@code UTC_TIMESTAMP()} are the statement's start, constant
   * within it), {@code :q} the cost in ticks, {@code :cap} the capacity, {@code :wait} the
   * caller's time left in microseconds.
   *
   * <p>The row's lock is waited for in the database, where the store's timeout cannot reach: a
   * caller that gave up must not be charged when the row comes free later. So the update charges
   * only if {@code SYSDATE(6)}, the time it runs, is within {@code :wait} of the statement's
   * start, and otherwise reports {@link #TOO_LATE} and leaves the state as it is. ({@code
   * --sysdate-is-now} makes the two the same, and a late statement charges as a prompt one.)
   *
   * <p>{@code expires_at} is assigned first and from the row as it was, so the result does not
   * depend on the order the server assigns in ({@code SIMULTANEOUS_ASSIGNMENT} or not); it does
   * not look at the time, so a late statement that would have admitted moves only {@code
   * expires_at}, later than the state needs, which pruning alone reads. {@code IF} evaluates only
   * the branch it takes, so a state of other limits is never cast.
   */
  private static final String TEMPLATE = "INSERT INTO sluice_buckets (k, layout, state, expires_at)"
      + " VALUES (:k, 'b', CAST(:now + :q + 0 * LAST_INSERT_ID(0) AS CHAR), :now + :q)"
      + " ON DUPLICATE KEY UPDATE"
      + " expires_at = IF(layout <> 'b' OR LOCATE(',', state) > 0, expires_at,"
      + " IF(CAST(state AS SIGNED) - :now + :q <= :cap,"
      + " GREATEST(CAST(state AS SIGNED), :now) + :q, expires_at)),"
      + " state = IF(layout <> 'b' OR LOCATE(',', state) > 0,"
      + " IF(LAST_INSERT_ID(" + OTHER_LIMITS + ") > 0, state, state),"
      + " IF(SYSDATE(6) > NOW(6) + INTERVAL :wait MICROSECOND,"
      + " IF(LAST_INSERT_ID(" + TOO_LATE + ") > 0, state, state),"
      + " IF(LAST_INSERT_ID(CAST(state AS SIGNED) - :now + " + BIAS + ") > 0"
      + " AND CAST(state AS SIGNED) - :now + :q <= :cap,"
      + " CAST(GREATEST(CAST(state AS SIGNED), :now) + :q AS CHAR), state)))";

  static final char KEY = 'k';
  static final char NOW = 'n';
  static final char COST = 'q';
  static final char CAPACITY = 'c';
  static final char WAIT = 'w';

  private AdmitStatement() {}

  /**
   * Whether the statement decides {@code r}: a {@code tryAcquire} on one bucket of whole ticks
   * ({@code "b"}), without a penalty, of a cost from 1 tick up to the capacity (a cost above it
   * must never be written by the statement's insert), and a capacity of at most {@link
   * StoreProtocol#SCRIPT_BIG} ticks, where the procedure's backlog is never capped.
   */
  static boolean handles(StoreRequest r) {
    if (r.operation() != StoreProtocol.Operation.TRY_ACQUIRE || r.isGroup() || r.limits() != 1
        || !"b".equals(r.layout()) || r.argument(0, StoreProtocol.ARG_PENALTY) != 0) {
      return false;
    }
    long q = r.argument(0, StoreProtocol.ARG_QUANTUM);
    long cap = r.argument(0, StoreProtocol.ARG_CAPACITY);
    return q > 0 && q <= cap && cap <= StoreProtocol.SCRIPT_BIG;
  }

  /**
   * The statement for {@code table}, its parameters as {@code ?}; appends to {@code order} one of
   * {@link #KEY}, {@link #NOW}, {@link #COST}, {@link #CAPACITY}, {@link #WAIT} per parameter,
   * in order. With {@code databaseClock} the time is the database's, not a parameter. A positive
   * {@code lockWaitSeconds} bounds the wait for the row in the database (MariaDB's {@code SET
   * STATEMENT}; MySQL has no per-statement form for it, so there the session's {@code
   * innodb_lock_wait_timeout} does, 50 s by default, and a late statement charges nothing all the
   * same).
   */
  static String sql(String table, boolean databaseClock, int lockWaitSeconds,
      StringBuilder order) {
    String text = TEMPLATE.replace("sluice_buckets", table);
    StringBuilder sql = new StringBuilder(text.length() + 600);
    if (lockWaitSeconds > 0) {
      sql.append("SET STATEMENT innodb_lock_wait_timeout = ").append(lockWaitSeconds)
          .append(" FOR ");
    }
    int at = 0;
    while (at < text.length()) {
      int colon = text.indexOf(':', at);
      if (colon < 0) {
        sql.append(text, at, text.length());
        break;
      }
      sql.append(text, at, colon);
      int end = colon + 1;
      while (end < text.length() && Character.isLetter(text.charAt(end))) {
        end++;
      }
      String name = text.substring(colon + 1, end);
      switch (name) {
        case "k" -> parameter(sql, order, KEY);
        case "q" -> parameter(sql, order, COST);
        case "cap" -> parameter(sql, order, CAPACITY);
        case "wait" -> parameter(sql, order, WAIT);
        case "now" -> {
          if (databaseClock) {
            sql.append(DATABASE_NOW);
          } else {
            parameter(sql, order, NOW);
          }
        }
        default -> throw new IllegalStateException("unknown parameter :" + name);
      }
      at = end;
    }
    return sql.toString();
  }

  /** The statement's text goes to the server on every execution, by MariaDB Connector/J. */
  static final String TEXT_MARIADB = "MariaDB Connector/J";
  /** The same, by MySQL Connector/J. */
  static final String TEXT_CONNECTOR_J = "MySQL Connector/J";

  /**
   * Which driver, if any, sends {@code p}'s SQL as text on every execution (a statement prepared
   * on the client): {@link #TEXT_MARIADB}, {@link #TEXT_CONNECTOR_J}, or null (prepared on the
   * server, or a driver or pool that does not say).
   */
  static String preparedOnClientBy(PreparedStatement p) throws SQLException {
    PreparedStatement driver = p.isWrapperFor(PreparedStatement.class)
        ? p.unwrap(PreparedStatement.class) : p;
    return switch (driver.getClass().getName()) {
      case "org.mariadb.jdbc.ClientPreparedStatement",   // MariaDB Connector/J 3
          "org.mariadb.jdbc.ClientSidePreparedStatement" -> TEXT_MARIADB;   // 2
      case "com.mysql.cj.jdbc.ClientPreparedStatement" -> TEXT_CONNECTOR_J;
      default -> null;
    };
  }

  private static void parameter(StringBuilder sql, StringBuilder order, char kind) {
    sql.append('?');
    order.append(kind);
  }
}

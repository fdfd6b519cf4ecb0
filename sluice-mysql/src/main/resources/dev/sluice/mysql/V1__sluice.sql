-- Sluice MySQL / MariaDB schema, version 1 (MySQL 8.0.17+, MariaDB 10.6+).
--
-- Usable as is from the mysql / mariadb client, Flyway or Liquibase (the DELIMITER lines are the
-- clients'; the default table name is sluice_buckets), or applied by
-- MysqlStore.builder(dataSource).createIfMissing(true). MysqlStore.schemaSql(table) gives this
-- text for another table name.
--
-- Five tables: one row per limited key (sluice_buckets), per key of a group and per group
-- (_groups), per permit in flight (_permits, _group_permits) and per live instance of a fleet
-- (_instances). A bucket row's state holds its limits' slots as integers separated by commas (no
-- arrays in MySQL), in microseconds of the database clock or micro-units of cost for window
-- counts (dev.sluice.spi.StoreProtocol: bucket [E] or [E, R], fixed window [start, count,
-- blockedUntil], sliding window [start, previous, current, blockedUntil]); -2^53 means "none".
-- layout names the limits' kinds ('b', 'r', 'f', 's'), so a key stored under other limits restarts
-- from empty. expires_at is when the row holds nothing any more, in microseconds since the epoch
-- (permits: milliseconds): pruning deletes rows past it, in batches.
--
-- A single bucket's tryAcquire (one bucket of whole ticks, no penalty) is one INSERT ... ON
-- DUPLICATE KEY UPDATE that the store sends (dev.sluice.mysql.AdmitStatement): it decides under
-- the row's lock alone, by the rule of sluice_buckets_decide's fast path, and writes only an
-- admission. Because it takes no named lock, the procedures write a row they did not find with a
-- plain INSERT: if the statement inserted it in between, that fails with a duplicate key, the
-- procedure's transaction rolls back whole, and the store decides again.
--
-- Every other decision is one CALL of a procedure below, one round trip, one atomic step on the
-- database clock (UTC_TIMESTAMP(6), read once the key is held): the procedure takes a named lock
-- on the key (GET_LOCK, on a hash of the table and key: decisions on one key run one at a time,
-- other keys are not held up), starts a READ COMMITTED transaction, reads the row with a locking
-- read, computes the next state as core's engine does, writes it only if it changed (deleting
-- the row once it holds nothing), releases the named lock, commits, and answers {now, state
-- before} as one line of integers separated by commas: core rebuilds the decision and all its
-- figures from that. The named lock is released before the commit so that the next decision on
-- the key computes while this one's commit is flushed (commits are flushed in groups); its
-- locking read waits for this row until the commit, so it never reads the state before it. The
-- named lock is what a missing row cannot give: a row lock alone lets two first decisions on a
-- new key both find nothing (READ COMMITTED), or deadlock on gap locks (REPEATABLE READ).
-- docs/operations.md gives the measurements.
--
-- Every number of the protocol is named once per procedure, with the name of StoreProtocol's
-- constant (c_ and lower case: c_arg_quantum is ARG_QUANTUM); offsets count from 0 as Java's, and
-- the lists count from 1, hence sluice_my1_at(p_args, a + c_arg_kind) with a the 1-based index of
-- a limit's first argument. MysqlProtocolTest compares every name with Java's.

CREATE TABLE IF NOT EXISTS sluice_buckets (
  k          VARBINARY(1536) NOT NULL,
  layout     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state      VARCHAR(4096) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (k),
  KEY sluice_buckets_expires_at (expires_at)
) ENGINE=InnoDB COMMENT='sluice schema 1';

-- A group's state: the parent under key '' (no limited key is empty) and each key's assured and
-- ceiling buckets under (group, key), so that a group's state is never a plain key's.
CREATE TABLE IF NOT EXISTS sluice_buckets_groups (
  grp        VARBINARY(1024) NOT NULL,
  k          VARBINARY(1536) NOT NULL,
  layout     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state      VARCHAR(4096) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (grp, k),
  KEY sluice_buckets_groups_expires_at (expires_at)
) ENGINE=InnoDB;

-- The live instances of a fleet (fleet mode, docs/fleet.md); expires_at in microseconds.
CREATE TABLE IF NOT EXISTS sluice_buckets_instances (
  fleet      VARBINARY(1024) NOT NULL,
  instance   VARBINARY(255) NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (fleet, instance)
) ENGINE=InnoDB;

-- Permits in flight (a ConcurrencyLimiter on MySQL, docs/concurrency.md): the permit's id, its
-- weight and the instant its lease ends, in milliseconds on the database clock.
CREATE TABLE IF NOT EXISTS sluice_buckets_permits (
  k          VARBINARY(1536) NOT NULL,
  id         VARBINARY(255) NOT NULL,
  weight     INT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (k, id),
  KEY sluice_buckets_permits_expires_at (expires_at)
) ENGINE=InnoDB;

-- Permits of the keys of a group, apart from the keys outside any group.
CREATE TABLE IF NOT EXISTS sluice_buckets_group_permits (
  grp        VARBINARY(1024) NOT NULL,
  k          VARBINARY(1536) NOT NULL,
  id         VARBINARY(255) NOT NULL,
  weight     INT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (grp, k, id),
  KEY sluice_buckets_group_permits_expires_at (expires_at)
) ENGINE=InnoDB;

DELIMITER $$

-- Pure helpers, shared by every Sluice table of this version. ----------------------------------

-- The i-th (from 1) integer of a list separated by commas.
DROP FUNCTION IF EXISTS sluice_my1_at $$
CREATE FUNCTION sluice_my1_at(s VARCHAR(8192) CHARACTER SET ascii, i INT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(s, ',', i), ',', -1) AS SIGNED) $$

-- The list with its i-th integer replaced by v.
DROP FUNCTION IF EXISTS sluice_my1_put $$
CREATE FUNCTION sluice_my1_put(s VARCHAR(8192) CHARACTER SET ascii, i INT, v BIGINT)
  RETURNS VARCHAR(8192) CHARACTER SET ascii
  DETERMINISTIC NO SQL
BEGIN
  DECLARE n INT DEFAULT LENGTH(s) - LENGTH(REPLACE(s, ',', '')) + 1;
  RETURN CONCAT(IF(i = 1, '', CONCAT(SUBSTRING_INDEX(s, ',', i - 1), ',')), v,
    IF(i >= n, '', CONCAT(',', SUBSTRING_INDEX(s, ',', i - n))));
END $$

-- Integers from the first to the last (from 1) of a list, as a list.
DROP FUNCTION IF EXISTS sluice_my1_slice $$
CREATE FUNCTION sluice_my1_slice(s VARCHAR(8192) CHARACTER SET ascii, first INT, last INT)
  RETURNS VARCHAR(8192) CHARACTER SET ascii
  DETERMINISTIC NO SQL
  RETURN SUBSTRING_INDEX(SUBSTRING_INDEX(s, ',', last), ',', first - last - 1) $$

-- a + b, at most 2^53 - 1 (StoreProtocol.SCRIPT_MAX).
DROP FUNCTION IF EXISTS sluice_my1_add $$
CREATE FUNCTION sluice_my1_add(a BIGINT, b BIGINT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN LEAST(a + b, 9007199254740991) $$

-- Time from now until t; 0 when t is "none" or past.
DROP FUNCTION IF EXISTS sluice_my1_until $$
CREATE FUNCTION sluice_my1_until(t BIGINT, now BIGINT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN IF(t = -9007199254740992, 0, GREATEST(t - now, 0)) $$

-- The start of the window of length w that contains now.
DROP FUNCTION IF EXISTS sluice_my1_aligned $$
CREATE FUNCTION sluice_my1_aligned(now BIGINT, w BIGINT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN now - MOD(MOD(now, w) + w, w) $$

-- A fixed window's count at now.
DROP FUNCTION IF EXISTS sluice_my1_fixed_count $$
CREATE FUNCTION sluice_my1_fixed_count(st BIGINT, cnt BIGINT, now BIGINT, w BIGINT)
  RETURNS BIGINT DETERMINISTIC NO SQL
  RETURN IF(st = -9007199254740992 OR now >= sluice_my1_add(st, w), 0, cnt) $$

-- A sliding window rolled forward to now: 'start,previous,current'.
DROP FUNCTION IF EXISTS sluice_my1_roll $$
CREATE FUNCTION sluice_my1_roll(st BIGINT, prev BIGINT, curr BIGINT, now BIGINT, w BIGINT)
  RETURNS VARCHAR(64) CHARACTER SET ascii DETERMINISTIC NO SQL
BEGIN
  DECLARE al BIGINT DEFAULT sluice_my1_aligned(now, w);
  IF st = -9007199254740992 OR al > sluice_my1_add(st, w) THEN
    RETURN CONCAT(al, ',0,0');
  ELSEIF al = sluice_my1_add(st, w) THEN
    RETURN CONCAT(al, ',', curr, ',0');
  END IF;
  RETURN CONCAT(st, ',', prev, ',', curr);
END $$

-- The sliding estimate plus q, in IEEE doubles, in exactly the order core computes it.
DROP FUNCTION IF EXISTS sluice_my1_sliding $$
CREATE FUNCTION sluice_my1_sliding(st BIGINT, prev BIGINT, curr BIGINT, now BIGINT, w BIGINT,
    q BIGINT) RETURNS DOUBLE DETERMINISTIC NO SQL
BEGIN
  DECLARE al BIGINT DEFAULT sluice_my1_aligned(now, w);
  DECLARE part DOUBLE;
  IF st = -9007199254740992 OR al > sluice_my1_add(st, w) THEN
    RETURN CAST(q AS DOUBLE);
  ELSEIF al = sluice_my1_add(st, w) THEN
    SET part = CAST(curr AS DOUBLE) * CAST(w - GREATEST(0, LEAST(w, now - al)) AS DOUBLE);
    SET part = part / CAST(w AS DOUBLE);
    RETURN part + CAST(q AS DOUBLE);
  END IF;
  SET part = CAST(prev AS DOUBLE) * CAST(w - GREATEST(0, LEAST(w, now - st)) AS DOUBLE);
  SET part = part / CAST(w AS DOUBLE);
  RETURN part + CAST(curr + q AS DOUBLE);
END $$

-- The bucket's rule (core's BucketRules). A bucket empty at e (a tick; r the steps rounding e up
-- added, 0 at scale 1) holds, at now, sc * (e - now) - r steps while e > now, else 0, at most
-- 2^52 steps (StoreProtocol.SCRIPT_BIG; -2^53 is SCRIPT_NONE, "no time").
DROP FUNCTION IF EXISTS sluice_my1_backlog $$
CREATE FUNCTION sluice_my1_backlog(e BIGINT, r BIGINT, sc BIGINT, now BIGINT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN CASE
    WHEN e = -9007199254740992 OR e <= now THEN 0
    WHEN e - now > 4503599627370496 DIV sc THEN 4503599627370496
    WHEN sc = 1 THEN e - now
    ELSE (e - now) * sc - LEAST(r, sc - 1)
  END $$

-- A bucket holding b steps admits q more when they fit below its capacity.
DROP FUNCTION IF EXISTS sluice_my1_admits $$
CREATE FUNCTION sluice_my1_admits(b BIGINT, q BIGINT, cap BIGINT) RETURNS BOOLEAN
  DETERMINISTIC NO SQL
  RETURN sluice_my1_add(b, q) <= cap $$

-- Holding st steps of 1/sc tick, a bucket is empty this many whole ticks from now (rounded up).
DROP FUNCTION IF EXISTS sluice_my1_ticks_up $$
CREATE FUNCTION sluice_my1_ticks_up(st BIGINT, sc BIGINT) RETURNS BIGINT
  DETERMINISTIC NO SQL
  RETURN (st + sc - 1) DIV sc $$

-- The database clock, in microseconds since the epoch (UTC, whatever the session's time zone).
DROP FUNCTION IF EXISTS sluice_my1_now $$
CREATE FUNCTION sluice_my1_now() RETURNS BIGINT
  NOT DETERMINISTIC NO SQL
  RETURN TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) $$

-- One decision, atomically, on the database clock: a port of core's Engine (docs/semantics.md).
--   p_key     the key
--   p_op      the operation's code (c_try_acquire ... c_release)
--   p_now     microseconds since the epoch, or NULL for the database clock (a test hook)
--   p_layout  the limits' layout letters, e.g. 'bs' ('r': a bucket counted in steps of 1/scale
--             of a tick, with state [E, R])
--   p_args    per limit c_args_per_limit arguments (c_arg_*: kind, capacity, window, penalty,
--             quantum, scale), then (c_after_limits_count) the count of grains a lease asks for
--             or a release gives back (1 otherwise), all separated by commas
--   p_lock_ms the longest to wait for the key, in milliseconds (whole seconds on MySQL, whose
--             GET_LOCK counts no fractions: the store rounds up; MariaDB takes fractions)
-- Answers one row, one column: 'now,slot,slot,...', the state as it was before.
DROP PROCEDURE IF EXISTS sluice_buckets_decide $$
CREATE PROCEDURE sluice_buckets_decide(p_key VARBINARY(1536), p_op INT, p_now BIGINT,
    p_layout VARCHAR(64) CHARACTER SET ascii, p_args VARCHAR(8192) CHARACTER SET ascii,
    p_lock_ms INT)
  MODIFIES SQL DATA
BEGIN
  -- the fast path's names; the general path's are in its block below
  DECLARE c_script_none BIGINT DEFAULT -9007199254740992;
  DECLARE c_try_acquire INT DEFAULT 0;
  DECLARE c_check INT DEFAULT 1;
  DECLARE c_arg_capacity INT DEFAULT 1;
  DECLARE c_arg_penalty INT DEFAULT 3;
  DECLARE c_arg_quantum INT DEFAULT 4;
  DECLARE lk VARCHAR(64) CHARACTER SET ascii
    DEFAULT CONCAT('sluice:', MD5(CONCAT('sluice_buckets ', p_key)));
  DECLARE stored VARCHAR(8192) CHARACTER SET ascii;
  DECLARE row_layout VARCHAR(64) CHARACTER SET ascii;
  DECLARE now BIGINT; DECLARE departure BIGINT; DECLARE bl BIGINT; DECLARE stop_ BIGINT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    DO RELEASE_LOCK(lk);
    RESIGNAL;
  END;

  -- READ COMMITTED: locking reads take no gap locks (first decisions on new keys never
  -- deadlock); they wait for the row a decision before this one wrote and has not committed.
  -- The transaction starts before the key is held, so that holding it takes fewer statements.
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF GET_LOCK(lk, p_lock_ms / 1000) IS NOT TRUE THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'sluice: timed out waiting for the key';
  END IF;

  -- The common case, one bucket (leaky, token or GCRA) of scale 1 without a penalty, asked to
  -- admit or to check: the same decision as the general path below, by the same bucket rule
  -- (sluice_my1_backlog, sluice_my1_admits), without its lists and loops, in as few statements
  -- as it takes (each costs microseconds in a procedure).
  IF p_layout = 'b' AND p_op <= c_check
      AND sluice_my1_at(p_args, 1 + c_arg_penalty) = 0 THEN
    SELECT b.layout, b.state INTO row_layout, stored FROM sluice_buckets b WHERE b.k = p_key
      FOR UPDATE;
    -- The clock is read once the key is held: decisions on one key take effect in clock order.
    SET now = COALESCE(p_now, sluice_my1_now()),
      departure = IF(row_layout IS NULL OR row_layout <> 'b' OR LOCATE(',', stored) > 0,
        c_script_none, CAST(stored AS SIGNED)),
      bl = sluice_my1_backlog(departure, 0, 1, now),
      stop_ = IF(p_op = c_try_acquire AND sluice_my1_admits(bl,
          sluice_my1_at(p_args, 1 + c_arg_quantum), sluice_my1_at(p_args, 1 + c_arg_capacity)),
        sluice_my1_add(now, sluice_my1_ticks_up(
          sluice_my1_add(bl, sluice_my1_at(p_args, 1 + c_arg_quantum)), 1)),
        departure);   -- a check or a rejection changes nothing
    IF stop_ <> departure AND stop_ <= now THEN
      IF row_layout = 'b' THEN
        DELETE FROM sluice_buckets WHERE k = p_key;
      END IF;
    ELSEIF stop_ <> departure AND row_layout IS NULL THEN
      -- Fails (duplicate key, all rolled back, the store decides again) if the store's one
      -- statement inserted the row since the read above: it takes the row, not the named lock.
      INSERT INTO sluice_buckets (k, layout, state, expires_at)
        VALUES (p_key, 'b', CONCAT(stop_), stop_);
    ELSEIF stop_ <> departure THEN
      UPDATE sluice_buckets SET layout = 'b', state = CONCAT(stop_), expires_at = stop_
        WHERE k = p_key;
    END IF;
    DO RELEASE_LOCK(lk);
    COMMIT;
    SELECT CONCAT(now, ',', departure);
  ELSE BEGIN
    DECLARE c_script_big BIGINT DEFAULT 4503599627370496;
    DECLARE c_fill_up INT DEFAULT 2;
    DECLARE c_reserve INT DEFAULT 3;
    DECLARE c_lease INT DEFAULT 4;
    DECLARE c_release INT DEFAULT 5;
    DECLARE c_bucket INT DEFAULT 0;
    DECLARE c_fixed_window INT DEFAULT 1;
    DECLARE c_sliding_window INT DEFAULT 2;
    DECLARE c_arg_kind INT DEFAULT 0;
    DECLARE c_arg_window INT DEFAULT 2;
    DECLARE c_arg_scale INT DEFAULT 5;
    DECLARE c_args_per_limit INT DEFAULT 6;
    DECLARE c_after_limits_count INT DEFAULT 0;
    DECLARE c_after_limits_reserve INT DEFAULT 1;   -- a group's; sluice_buckets_decide_group reads it
    DECLARE c_bucket_empty_at INT DEFAULT 0;
    DECLARE c_bucket_remainder INT DEFAULT 1;
    DECLARE c_fixed_start INT DEFAULT 0;
    DECLARE c_fixed_count INT DEFAULT 1;
    DECLARE c_fixed_blocked_until INT DEFAULT 2;
    DECLARE c_sliding_start INT DEFAULT 0;
    DECLARE c_sliding_previous INT DEFAULT 1;
    DECLARE c_sliding_current INT DEFAULT 2;
    DECLARE c_sliding_blocked_until INT DEFAULT 3;
    DECLARE c_bucket_slots INT DEFAULT 1;
    DECLARE c_scaled_bucket_slots INT DEFAULT 2;
    DECLARE c_fixed_window_slots INT DEFAULT 3;
    DECLARE c_sliding_window_slots INT DEFAULT 4;
    DECLARE n INT DEFAULT CHAR_LENGTH(p_layout);
    DECLARE after_ INT;
    DECLARE total INT DEFAULT 0;
    DECLARE i INT; DECLARE j INT; DECLARE a INT; DECLARE o INT;
    DECLARE kind INT; DECLARE cap BIGINT; DECLARE w BIGINT; DECLARE pen BIGINT;
    DECLARE q BIGINT; DECLARE sc BIGINT;
    DECLARE offsets VARCHAR(1024) CHARACTER SET ascii DEFAULT '';
    DECLARE s VARCHAR(8192) CHARACTER SET ascii;
    DECLARE nx VARCHAR(8192) CHARACTER SET ascii;
    DECLARE bks VARCHAR(8192) CHARACTER SET ascii DEFAULT '';
    DECLARE qts VARCHAR(8192) CHARACTER SET ascii DEFAULT '';
    DECLARE oks VARCHAR(1024) CHARACTER SET ascii DEFAULT '';
    DECLARE r VARCHAR(64) CHARACTER SET ascii;
    DECLARE stored_layout VARCHAR(64) CHARACTER SET ascii;
    DECLARE have_row BOOLEAN DEFAULT FALSE;
    DECLARE ok BOOLEAN; DECLARE all_ok BOOLEAN; DECLARE want_pen BOOLEAN;
    DECLARE bk BIGINT; DECLARE filled BIGINT; DECLARE cnt BIGINT;
    DECLARE est DOUBLE;
    DECLARE idle BIGINT; DECLARE part BIGINT; DECLARE d BIGINT;
    DECLARE t BIGINT; DECLARE st BIGINT; DECLARE qt BIGINT;
    DECLARE want BIGINT; DECLARE granted BIGINT; DECLARE room BIGINT;

      SELECT b.layout, b.state INTO stored_layout, stored
        FROM sluice_buckets b WHERE b.k = p_key FOR UPDATE;
      SET have_row = stored IS NOT NULL;
      -- The clock is read once the key is held: decisions on one key take effect in clock order.
      SET now = COALESCE(p_now, sluice_my1_now());
      -- the limits: each one's first slot (from 1) in the state, and the state's length
      SET i = 1;
      WHILE i <= n DO
        SET a = (i - 1) * c_args_per_limit + 1;   -- p_args' index of the limit's first argument
        SET kind = sluice_my1_at(p_args, a + c_arg_kind);
        SET sc = sluice_my1_at(p_args, a + c_arg_scale);
        SET offsets = CONCAT(offsets, IF(i = 1, '', ','), total + 1);
        SET total = total + CASE kind
          WHEN c_bucket THEN IF(sc = 1, c_bucket_slots, c_scaled_bucket_slots)
          WHEN c_fixed_window THEN c_fixed_window_slots
          ELSE c_sliding_window_slots END;
        SET i = i + 1;
      END WHILE;
      SET after_ = c_args_per_limit * n + 1;

      IF have_row AND stored_layout = p_layout
          AND LENGTH(stored) - LENGTH(REPLACE(stored, ',', '')) + 1 = total THEN
        SET s = stored;
      ELSE
        -- Rules.initialize: no time in every time slot, counts 0
        SET s = REPEAT('0,', total - 1);
        SET s = CONCAT(s, '0');
        SET i = 1;
        WHILE i <= n DO
          SET a = (i - 1) * c_args_per_limit + 1;
          SET o = sluice_my1_at(offsets, i);
          SET kind = sluice_my1_at(p_args, a + c_arg_kind);
          IF kind = c_bucket THEN
            SET s = sluice_my1_put(s, o + c_bucket_empty_at, c_script_none);
          ELSEIF kind = c_fixed_window THEN
            SET s = sluice_my1_put(s, o + c_fixed_start, c_script_none);
            SET s = sluice_my1_put(s, o + c_fixed_blocked_until, c_script_none);
          ELSE
            SET s = sluice_my1_put(s, o + c_sliding_start, c_script_none);
            SET s = sluice_my1_put(s, o + c_sliding_blocked_until, c_script_none);
          END IF;
          SET i = i + 1;
        END WHILE;
      END IF;
      SET nx = s;

      -- BucketRules.backlog, by the one bucket rule (0 for windows)
      SET i = 1;
      WHILE i <= n DO
        SET a = (i - 1) * c_args_per_limit + 1;
        SET o = sluice_my1_at(offsets, i);
        SET bk = 0;
        IF sluice_my1_at(p_args, a + c_arg_kind) = c_bucket THEN
          SET sc = sluice_my1_at(p_args, a + c_arg_scale);
          SET bk = sluice_my1_backlog(sluice_my1_at(s, o + c_bucket_empty_at),
            IF(sc = 1, 0, sluice_my1_at(s, o + c_bucket_remainder)), sc, now);
        END IF;
        SET bks = CONCAT(bks, IF(i = 1, '', ','), bk);
        SET i = i + 1;
      END WHILE;

      IF p_op = c_lease OR p_op = c_release THEN
        -- leases (Engine.lease): buckets only; as many grains of q as every limit holds room
        -- for, charged as admissions are; a release gives grains back, never below empty, and
        -- leaves a penalty's hold alone
        SET want = sluice_my1_at(p_args, after_ + c_after_limits_count);
        SET granted = want;
        IF p_op = c_lease THEN
          SET i = 1;
          WHILE i <= n DO
            SET a = (i - 1) * c_args_per_limit + 1;
            SET room = sluice_my1_at(p_args, a + c_arg_capacity) - sluice_my1_at(bks, i);
            SET granted = LEAST(granted,
              IF(room <= 0, 0, room DIV sluice_my1_at(p_args, a + c_arg_quantum)));
            SET i = i + 1;
          END WHILE;
        END IF;
        IF want > 0 AND granted > 0 THEN
          SET i = 1;
          WHILE i <= n DO
            SET a = (i - 1) * c_args_per_limit + 1;
            SET o = sluice_my1_at(offsets, i);
            SET bk = sluice_my1_at(bks, i);
            SET q = sluice_my1_at(p_args, a + c_arg_quantum);
            SET cap = sluice_my1_at(p_args, a + c_arg_capacity);
            SET sc = sluice_my1_at(p_args, a + c_arg_scale);
            SET st = NULL;
            IF p_op = c_lease THEN
              SET st = bk + granted * q;
            ELSEIF bk > 0 AND bk <= cap THEN
              SET st = bk - IF(want > bk DIV q, bk, want * q);
            END IF;
            IF st IS NOT NULL THEN
              SET t = sluice_my1_ticks_up(st, sc);
              SET nx = sluice_my1_put(nx, o + c_bucket_empty_at, sluice_my1_add(now, t));
              IF sc <> 1 THEN
                SET nx = sluice_my1_put(nx, o + c_bucket_remainder, t * sc - st);
              END IF;
            END IF;
            SET i = i + 1;
          END WHILE;
        END IF;
      ELSE
        -- reserve (Engine.queues): a limit's queue ahead of the request, in its steps, is the
        -- longest backlog among the limits of its scale, and the others' waits in whole ticks
        SET i = 1;
        WHILE i <= n DO
          SET qt = 0;
          IF p_op = c_reserve THEN
            SET sc = sluice_my1_at(p_args, (i - 1) * c_args_per_limit + 1 + c_arg_scale);
            SET j = 1;
            WHILE j <= n DO
              SET a = (j - 1) * c_args_per_limit + 1;
              IF sluice_my1_at(p_args, a + c_arg_scale) = sc THEN
                SET d = sluice_my1_at(bks, j);
              ELSE
                SET d = sluice_my1_ticks_up(sluice_my1_at(bks, j),
                  sluice_my1_at(p_args, a + c_arg_scale));
                SET d = IF(d > c_script_big DIV sc, c_script_big, d * sc);
              END IF;
              SET qt = GREATEST(qt, d);
              SET j = j + 1;
            END WHILE;
          END IF;
          SET qts = CONCAT(qts, IF(i = 1, '', ','), qt);
          SET i = i + 1;
        END WHILE;

        -- fits (Rules.fits; reserve: Engine.queues) ------------------------------------------
        SET all_ok = TRUE;
        SET i = 1;
        WHILE i <= n DO
          SET a = (i - 1) * c_args_per_limit + 1;
          SET o = sluice_my1_at(offsets, i);
          SET kind = sluice_my1_at(p_args, a + c_arg_kind);
          SET cap = sluice_my1_at(p_args, a + c_arg_capacity);
          SET w = sluice_my1_at(p_args, a + c_arg_window);
          SET q = sluice_my1_at(p_args, a + c_arg_quantum);
          IF kind = c_bucket THEN
            SET ok = sluice_my1_admits(
              IF(p_op = c_reserve, sluice_my1_at(qts, i), sluice_my1_at(bks, i)), q, cap);
          ELSEIF kind = c_fixed_window THEN
            SET ok = sluice_my1_until(sluice_my1_at(s, o + c_fixed_blocked_until), now) = 0
              AND sluice_my1_fixed_count(sluice_my1_at(s, o + c_fixed_start),
                sluice_my1_at(s, o + c_fixed_count), now, w) + q <= cap;
          ELSE
            SET ok = sluice_my1_until(sluice_my1_at(s, o + c_sliding_blocked_until), now) = 0
              AND sluice_my1_sliding(sluice_my1_at(s, o + c_sliding_start),
                sluice_my1_at(s, o + c_sliding_previous), sluice_my1_at(s, o + c_sliding_current),
                now, w, q) <= CAST(cap AS DOUBLE);
          END IF;
          SET oks = CONCAT(oks, IF(i = 1, '', ','), IF(ok, 1, 0));
          SET all_ok = all_ok AND ok;
          SET i = i + 1;
        END WHILE;

        -- fill, charge, penalize (Rules.fill, Rules.charge, Rules.penalize) ------------------
        -- A penalty starts after an overflow (a rejection, or a fill-up that reaches capacity)
        -- of a cost that could fit, only when none is in force.
        SET i = 1;
        WHILE i <= n DO
          SET a = (i - 1) * c_args_per_limit + 1;
          SET o = sluice_my1_at(offsets, i);
          SET kind = sluice_my1_at(p_args, a + c_arg_kind);
          SET cap = sluice_my1_at(p_args, a + c_arg_capacity);
          SET w = sluice_my1_at(p_args, a + c_arg_window);
          SET pen = sluice_my1_at(p_args, a + c_arg_penalty);
          SET q = sluice_my1_at(p_args, a + c_arg_quantum);
          SET sc = sluice_my1_at(p_args, a + c_arg_scale);
          SET ok = sluice_my1_at(oks, i) = 1;
          SET want_pen = FALSE;
          IF kind = c_bucket THEN
            SET bk = sluice_my1_at(bks, i);
            SET st = NULL;   -- the backlog to hold, in steps; NULL: unchanged
            IF p_op = c_fill_up THEN
              SET filled = sluice_my1_add(bk, q);
              SET st = GREATEST(bk, LEAST(cap, filled));
              SET want_pen = filled >= cap AND q <= cap;
            ELSEIF p_op <> c_check AND all_ok THEN
              SET st = sluice_my1_add(IF(p_op = c_reserve, sluice_my1_at(qts, i), bk), q);
            ELSEIF p_op <> c_check THEN
              SET want_pen = (NOT ok) AND q <= cap;
            END IF;
            IF want_pen AND pen > 0 AND bk <= cap THEN
              SET st = cap + pen;   -- held full for the penalty
            END IF;
            IF st IS NOT NULL THEN
              -- BucketRules.hold: E = now + the steps in ticks rounded up, R = what that added
              SET t = sluice_my1_ticks_up(st, sc);
              SET nx = sluice_my1_put(nx, o + c_bucket_empty_at, sluice_my1_add(now, t));
              IF sc <> 1 THEN
                SET nx = sluice_my1_put(nx, o + c_bucket_remainder, t * sc - st);
              END IF;
            END IF;
          ELSEIF kind = c_fixed_window THEN
            SET d = sluice_my1_at(s, o + c_fixed_start);
            IF p_op = c_fill_up THEN
              SET cnt = sluice_my1_fixed_count(d, sluice_my1_at(s, o + c_fixed_count), now, w);
              IF d = c_script_none OR now >= sluice_my1_add(d, w) THEN
                SET nx = sluice_my1_put(nx, o + c_fixed_start, now);
              END IF;
              SET nx = sluice_my1_put(nx, o + c_fixed_count, GREATEST(cnt, LEAST(cap, cnt + q)));
              SET want_pen = cnt + q >= cap AND q <= cap;
            ELSEIF p_op <> c_check AND all_ok THEN
              IF d = c_script_none OR now >= sluice_my1_add(d, w) THEN
                SET nx = sluice_my1_put(nx, o + c_fixed_start, now);
                SET nx = sluice_my1_put(nx, o + c_fixed_count, q);
              ELSE
                SET nx = sluice_my1_put(nx, o + c_fixed_count,
                  sluice_my1_at(s, o + c_fixed_count) + q);
              END IF;
            ELSEIF p_op <> c_check THEN
              SET want_pen = (NOT ok) AND q <= cap;
            END IF;
            IF want_pen AND pen > 0
                AND sluice_my1_until(sluice_my1_at(s, o + c_fixed_blocked_until), now) = 0 THEN
              SET nx = sluice_my1_put(nx, o + c_fixed_blocked_until, sluice_my1_add(now, pen));
            END IF;
          ELSE
            -- r: the window rolled to now, 'start,previous,current' (sluice_my1_roll)
            IF p_op = c_fill_up OR (p_op <> c_check AND all_ok) THEN
              SET r = sluice_my1_roll(sluice_my1_at(s, o + c_sliding_start),
                sluice_my1_at(s, o + c_sliding_previous), sluice_my1_at(s, o + c_sliding_current),
                now, w);
              SET nx = sluice_my1_put(nx, o + c_sliding_start, sluice_my1_at(r, 1));
              SET nx = sluice_my1_put(nx, o + c_sliding_previous, sluice_my1_at(r, 2));
            END IF;
            IF p_op = c_fill_up THEN
              SET est = sluice_my1_sliding(sluice_my1_at(s, o + c_sliding_start),
                sluice_my1_at(s, o + c_sliding_previous), sluice_my1_at(s, o + c_sliding_current),
                now, w, q);
              SET nx = sluice_my1_put(nx, o + c_sliding_current,
                GREATEST(sluice_my1_at(r, 3), LEAST(cap, sluice_my1_at(r, 3) + q)));
              SET want_pen = ((NOT (est <= CAST(cap AS DOUBLE))) OR est >= CAST(cap AS DOUBLE))
                AND q <= cap;
            ELSEIF p_op <> c_check AND all_ok THEN
              SET nx = sluice_my1_put(nx, o + c_sliding_current, sluice_my1_at(r, 3) + q);
            ELSEIF p_op <> c_check THEN
              SET want_pen = (NOT ok) AND q <= cap;
            END IF;
            IF want_pen AND pen > 0
                AND sluice_my1_until(sluice_my1_at(s, o + c_sliding_blocked_until), now) = 0 THEN
              SET nx = sluice_my1_put(nx, o + c_sliding_blocked_until, sluice_my1_add(now, pen));
            END IF;
          END IF;
          SET i = i + 1;
        END WHILE;
      END IF;

      IF nx <> s THEN
        -- reset_after (Rules.resetAfter): how long until the new state holds nothing ----------
        SET idle = 0;
        SET i = 1;
        WHILE i <= n DO
          SET a = (i - 1) * c_args_per_limit + 1;
          SET o = sluice_my1_at(offsets, i);
          SET kind = sluice_my1_at(p_args, a + c_arg_kind);
          SET w = sluice_my1_at(p_args, a + c_arg_window);
          IF kind = c_bucket THEN
            SET part = sluice_my1_until(sluice_my1_at(nx, o + c_bucket_empty_at), now);
          ELSEIF kind = c_fixed_window THEN
            SET part = sluice_my1_until(sluice_my1_at(nx, o + c_fixed_blocked_until), now);
            IF sluice_my1_fixed_count(sluice_my1_at(nx, o + c_fixed_start),
                sluice_my1_at(nx, o + c_fixed_count), now, w) > 0 THEN
              SET part = GREATEST(part,
                GREATEST(sluice_my1_add(sluice_my1_at(nx, o + c_fixed_start), w) - now, 0));
            END IF;
          ELSE
            SET r = sluice_my1_roll(sluice_my1_at(nx, o + c_sliding_start),
              sluice_my1_at(nx, o + c_sliding_previous), sluice_my1_at(nx, o + c_sliding_current),
              now, w);
            SET stop_ = now;
            IF sluice_my1_at(r, 3) > 0 THEN
              SET stop_ = sluice_my1_add(sluice_my1_at(r, 1), 2 * w);
            ELSEIF sluice_my1_at(r, 2) > 0 THEN
              SET stop_ = sluice_my1_add(sluice_my1_at(r, 1), w);
            END IF;
            SET part = GREATEST(sluice_my1_until(sluice_my1_at(nx, o + c_sliding_blocked_until), now),
              GREATEST(stop_ - now, 0));
          END IF;
          SET idle = GREATEST(idle, part);
          SET i = i + 1;
        END WHILE;
        IF idle <= 0 THEN
          IF have_row THEN
            DELETE FROM sluice_buckets WHERE k = p_key;
          END IF;
        ELSEIF have_row THEN
          UPDATE sluice_buckets SET layout = p_layout, state = nx, expires_at = now + idle
            WHERE k = p_key;
        ELSE
          -- as the fast path's: a duplicate key is the one statement's row, and is decided again
          INSERT INTO sluice_buckets (k, layout, state, expires_at)
            VALUES (p_key, p_layout, nx, now + idle);
        END IF;
      END IF;
      DO RELEASE_LOCK(lk);
      COMMIT;
      SELECT CONCAT(now, ',', s);
  END; END IF;
END $$

-- One group's decision, atomically, on the database clock: a port of core's GroupLimits.decide.
-- It holds the group (a named lock), reads the parent's row and the key's, writes each that
-- changed in one transaction, deletes a row whose buckets are empty, and answers {now, the key's
-- slots, the parent's slots} as they were before: core rebuilds the decision.
--   p_op      c_try_acquire or c_check (no other operation applies to a group)
--   p_layout  the limits' layout letters: the assured limit, the ceilings, last the parent
--             (all buckets: 'b', or 'r' for a scale above 1, state [E, R])
--   p_args    per limit c_args_per_limit arguments (c_arg_*); then c_after_limits_count, the
--             count (1), and c_after_limits_reserve, the parent's steps only assured traffic may
--             fill
DROP PROCEDURE IF EXISTS sluice_buckets_decide_group $$
CREATE PROCEDURE sluice_buckets_decide_group(p_group VARBINARY(1024), p_key VARBINARY(1536),
    p_op INT, p_now BIGINT, p_layout VARCHAR(64) CHARACTER SET ascii,
    p_args VARCHAR(8192) CHARACTER SET ascii, p_lock_ms INT)
  MODIFIES SQL DATA
BEGIN
  DECLARE c_script_none BIGINT DEFAULT -9007199254740992;
  DECLARE c_try_acquire INT DEFAULT 0;
  DECLARE c_arg_capacity INT DEFAULT 1;
  DECLARE c_arg_quantum INT DEFAULT 4;
  DECLARE c_arg_scale INT DEFAULT 5;
  DECLARE c_args_per_limit INT DEFAULT 6;
  DECLARE c_after_limits_reserve INT DEFAULT 1;
  DECLARE c_bucket_empty_at INT DEFAULT 0;
  DECLARE c_bucket_remainder INT DEFAULT 1;
  DECLARE c_bucket_slots INT DEFAULT 1;
  DECLARE c_scaled_bucket_slots INT DEFAULT 2;
  DECLARE lk VARCHAR(64) CHARACTER SET ascii
    DEFAULT CONCAT('sluice:', MD5(CONCAT('sluice_buckets_groups ', p_group)));
  DECLARE n INT DEFAULT CHAR_LENGTH(p_layout);
  DECLARE offsets VARCHAR(1024) CHARACTER SET ascii DEFAULT '';
  DECLARE bks VARCHAR(8192) CHARACTER SET ascii DEFAULT '';
  DECLARE total INT DEFAULT 0;
  DECLARE ks INT;
  DECLARE reserve_ BIGINT;
  DECLARE s VARCHAR(8192) CHARACTER SET ascii;
  DECLARE nx VARCHAR(8192) CHARACTER SET ascii;
  DECLARE g_layout VARCHAR(64) CHARACTER SET ascii;
  DECLARE g_state VARCHAR(8192) CHARACTER SET ascii;
  DECLARE k_layout VARCHAR(64) CHARACTER SET ascii;
  DECLARE k_state VARCHAR(8192) CHARACTER SET ascii;
  DECLARE have_g BOOLEAN; DECLARE have_k BOOLEAN;
  DECLARE now BIGINT;
  DECLARE ceilings BOOLEAN DEFAULT TRUE; DECLARE assured BOOLEAN; DECLARE borrowed BOOLEAN;
  DECLARE i INT; DECLARE a INT; DECLARE o INT; DECLARE first_ INT;
  DECLARE cap BIGINT; DECLARE q BIGINT; DECLARE sc BIGINT; DECLARE bk BIGINT;
  DECLARE st BIGINT; DECLARE t BIGINT; DECLARE idle BIGINT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    DO RELEASE_LOCK(lk);
    RESIGNAL;
  END;

  SET i = 1;
  WHILE i <= n DO
    SET sc = sluice_my1_at(p_args, (i - 1) * c_args_per_limit + 1 + c_arg_scale);
    SET offsets = CONCAT(offsets, IF(i = 1, '', ','), total + 1);
    SET total = total + IF(sc = 1, c_bucket_slots, c_scaled_bucket_slots);
    SET i = i + 1;
  END WHILE;
  SET ks = sluice_my1_at(offsets, n) - 1;
  SET reserve_ = sluice_my1_at(p_args, c_args_per_limit * n + 1 + c_after_limits_reserve);

  -- READ COMMITTED: locking reads take no gap locks (first decisions on new keys never
  -- deadlock); they wait for the row a decision before this one wrote and has not committed.
  -- The transaction starts before the key is held, so that holding it takes fewer statements.
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF GET_LOCK(lk, p_lock_ms / 1000) IS NOT TRUE THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'sluice: timed out waiting for the group';
  END IF;
  SELECT g.layout, g.state INTO g_layout, g_state
    FROM sluice_buckets_groups g WHERE g.grp = p_group AND g.k = '' FOR UPDATE;
  SET have_g = g_state IS NOT NULL;
  SELECT g.layout, g.state INTO k_layout, k_state
    FROM sluice_buckets_groups g WHERE g.grp = p_group AND g.k = p_key FOR UPDATE;
  SET have_k = k_state IS NOT NULL;
  -- The clock is read once the group is held: its decisions take effect in clock order.
  SET now = COALESCE(p_now, sluice_my1_now());

  -- the state: the key's slots, then the parent's; a row of another layout starts empty
  SET s = '';
  SET i = 1;
  WHILE i <= n DO
    SET sc = sluice_my1_at(p_args, (i - 1) * c_args_per_limit + 1 + c_arg_scale);
    SET s = CONCAT(s, IF(i = 1, '', ','), c_script_none, IF(sc = 1, '', ',0'));
    SET i = i + 1;
  END WHILE;
  IF have_k AND k_layout = LEFT(p_layout, n - 1)
      AND LENGTH(k_state) - LENGTH(REPLACE(k_state, ',', '')) + 1 = ks THEN
    SET s = CONCAT(k_state, ',', sluice_my1_slice(s, ks + 1, total));
  END IF;
  IF have_g AND g_layout = RIGHT(p_layout, 1)
      AND LENGTH(g_state) - LENGTH(REPLACE(g_state, ',', '')) + 1 = total - ks THEN
    SET s = CONCAT(sluice_my1_slice(s, 1, ks), ',', g_state);
  END IF;
  SET nx = s;

  -- BucketRules.backlog, by the one bucket rule; the paths (GroupLimits.decide)
  SET i = 1;
  WHILE i <= n DO
    SET a = (i - 1) * c_args_per_limit + 1;
    SET o = sluice_my1_at(offsets, i);
    SET sc = sluice_my1_at(p_args, a + c_arg_scale);
    SET bk = sluice_my1_backlog(sluice_my1_at(s, o + c_bucket_empty_at),
      IF(sc = 1, 0, sluice_my1_at(s, o + c_bucket_remainder)), sc, now);
    SET bks = CONCAT(bks, IF(i = 1, '', ','), bk);
    IF i > 1 AND i < n THEN
      SET ceilings = ceilings AND sluice_my1_admits(bk, sluice_my1_at(p_args, a + c_arg_quantum),
        sluice_my1_at(p_args, a + c_arg_capacity));
    END IF;
    SET i = i + 1;
  END WHILE;
  SET a = (n - 1) * c_args_per_limit + 1;   -- the parent's arguments
  SET assured = sluice_my1_admits(sluice_my1_at(bks, 1), sluice_my1_at(p_args, 1 + c_arg_quantum),
      sluice_my1_at(p_args, 1 + c_arg_capacity))
    AND ceilings
    AND sluice_my1_admits(sluice_my1_at(bks, n), sluice_my1_at(p_args, a + c_arg_quantum),
      sluice_my1_at(p_args, a + c_arg_capacity));
  SET borrowed = NOT assured AND ceilings
    AND sluice_my1_admits(sluice_my1_at(bks, n), sluice_my1_at(p_args, a + c_arg_quantum),
      sluice_my1_at(p_args, a + c_arg_capacity) - reserve_);

  IF p_op = c_try_acquire AND (assured OR borrowed) THEN
    -- BucketRules.charge and hold: E = now + the steps in ticks rounded up, R = what that added
    SET first_ = IF(assured, 1, 2);
    SET i = first_;
    WHILE i <= n DO
      SET a = (i - 1) * c_args_per_limit + 1;
      SET o = sluice_my1_at(offsets, i);
      SET sc = sluice_my1_at(p_args, a + c_arg_scale);
      SET st = sluice_my1_add(sluice_my1_at(bks, i), sluice_my1_at(p_args, a + c_arg_quantum));
      SET t = sluice_my1_ticks_up(st, sc);
      SET nx = sluice_my1_put(nx, o + c_bucket_empty_at, sluice_my1_add(now, t));
      IF sc <> 1 THEN
        SET nx = sluice_my1_put(nx, o + c_bucket_remainder, t * sc - st);
      END IF;
      SET i = i + 1;
    END WHILE;

    -- the key's row (BucketRules.resetAfter: idle once every bucket is empty)
    IF sluice_my1_slice(nx, 1, ks) <> sluice_my1_slice(s, 1, ks) THEN
      SET idle = 0;
      SET i = 1;
      WHILE i < n DO
        SET idle = GREATEST(idle, sluice_my1_until(
          sluice_my1_at(nx, sluice_my1_at(offsets, i) + c_bucket_empty_at), now));
        SET i = i + 1;
      END WHILE;
      IF idle <= 0 THEN
        DELETE FROM sluice_buckets_groups WHERE grp = p_group AND k = p_key;
      ELSE
        INSERT INTO sluice_buckets_groups (grp, k, layout, state, expires_at)
          VALUES (p_group, p_key, LEFT(p_layout, n - 1), sluice_my1_slice(nx, 1, ks), now + idle)
          ON DUPLICATE KEY UPDATE layout = LEFT(p_layout, n - 1),
            state = sluice_my1_slice(nx, 1, ks), expires_at = now + idle;
      END IF;
    END IF;
    -- the parent's row
    IF sluice_my1_slice(nx, ks + 1, total) <> sluice_my1_slice(s, ks + 1, total) THEN
      SET idle = sluice_my1_until(
        sluice_my1_at(nx, sluice_my1_at(offsets, n) + c_bucket_empty_at), now);
      IF idle <= 0 THEN
        DELETE FROM sluice_buckets_groups WHERE grp = p_group AND k = '';
      ELSE
        INSERT INTO sluice_buckets_groups (grp, k, layout, state, expires_at)
          VALUES (p_group, '', RIGHT(p_layout, 1), sluice_my1_slice(nx, ks + 1, total),
            now + idle)
          ON DUPLICATE KEY UPDATE layout = RIGHT(p_layout, 1),
            state = sluice_my1_slice(nx, ks + 1, total), expires_at = now + idle;
      END IF;
    END IF;
  END IF;
  DO RELEASE_LOCK(lk);
  COMMIT;
  SELECT CONCAT(now, ',', s);   -- a check or a rejection changes nothing
END $$

-- Records that p_instance of p_fleet is alive for p_ttl_ms from now (p_now: microseconds since
-- the epoch, or NULL for the database clock; a test hook), forgets the fleet's expired
-- instances, and answers how many are alive, this one included.
DROP PROCEDURE IF EXISTS sluice_buckets_live_instances $$
CREATE PROCEDURE sluice_buckets_live_instances(p_fleet VARBINARY(1024),
    p_instance VARBINARY(255), p_ttl_ms BIGINT, p_now BIGINT)
  MODIFIES SQL DATA
BEGIN
  DECLARE t BIGINT DEFAULT COALESCE(p_now, sluice_my1_now());
  DELETE FROM sluice_buckets_instances WHERE fleet = p_fleet AND expires_at <= t;
  INSERT INTO sluice_buckets_instances (fleet, instance, expires_at)
    VALUES (p_fleet, p_instance, t + p_ttl_ms * 1000)
    ON DUPLICATE KEY UPDATE expires_at = t + p_ttl_ms * 1000;
  SELECT COUNT(*) FROM sluice_buckets_instances WHERE fleet = p_fleet;
END $$

-- One step on p_key's permits (the store's PermitStore calls), under a named lock on the key:
--   p_op       op_acquire, op_renew, op_release or op_count
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_lease_ms acquire and renew: the lease, from now
--   p_now      microseconds since the epoch, or NULL for the database clock (a test hook)
-- Answers 'done (1 or 0),the key's weight in flight after the step,now in milliseconds'.
DROP PROCEDURE IF EXISTS sluice_buckets_permit $$
CREATE PROCEDURE sluice_buckets_permit(p_op INT, p_key VARBINARY(1536), p_id VARBINARY(255),
    p_weight INT, p_ceiling INT, p_lease_ms BIGINT, p_now BIGINT, p_lock_ms INT)
  MODIFIES SQL DATA
BEGIN
  DECLARE op_acquire INT DEFAULT 0;
  DECLARE op_renew INT DEFAULT 1;
  DECLARE op_release INT DEFAULT 2;
  DECLARE lk VARCHAR(64) CHARACTER SET ascii
    DEFAULT CONCAT('sluice:', MD5(CONCAT('sluice_buckets_permits ', p_key)));
  DECLARE now_ms BIGINT;
  DECLARE n BIGINT;
  DECLARE held INT;
  DECLARE done_ INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    DO RELEASE_LOCK(lk);
    RESIGNAL;
  END;
  -- READ COMMITTED: locking reads take no gap locks (first decisions on new keys never
  -- deadlock); they wait for the row a decision before this one wrote and has not committed.
  -- The transaction starts before the key is held, so that holding it takes fewer statements.
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF GET_LOCK(lk, p_lock_ms / 1000) IS NOT TRUE THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'sluice: timed out waiting for the key';
  END IF;
  SET now_ms = FLOOR(COALESCE(p_now, sluice_my1_now()) / 1000);
  DELETE FROM sluice_buckets_permits WHERE k = p_key AND expires_at <= now_ms;
  SELECT COALESCE(SUM(weight), 0) INTO n FROM sluice_buckets_permits WHERE k = p_key
    FOR UPDATE;
  IF p_op = op_acquire THEN
    -- a resent call finds its permit held and takes nothing twice
    SELECT weight INTO held FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
    IF held IS NOT NULL THEN
      SET done_ = 1;
    ELSEIF n + p_weight <= p_ceiling THEN
      INSERT INTO sluice_buckets_permits (k, id, weight, expires_at)
        VALUES (p_key, p_id, p_weight, now_ms + p_lease_ms);
      SET n = n + p_weight;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_renew THEN
    UPDATE sluice_buckets_permits SET expires_at = now_ms + p_lease_ms
      WHERE k = p_key AND id = p_id;
    SET done_ = IF(ROW_COUNT() > 0, 1, 0);
  ELSEIF p_op = op_release THEN
    SELECT weight INTO held FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
    IF held IS NOT NULL THEN
      DELETE FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
      SET n = n - held;
      SET done_ = 1;
    END IF;
  END IF;
  DO RELEASE_LOCK(lk);
  COMMIT;
  SELECT CONCAT(done_, ',', n, ',', now_ms);
END $$

-- One step on p_key's permits in p_group (the store's grouped PermitStore calls), under a named
-- lock on the group (its limit is checked against every key of it):
--   p_op       op_acquire, op_renew, op_release or op_count (p_key NULL: the group's count)
--   p_limit    acquire: the most weight in flight the group holds
--   p_borrow   acquire: the most weight in flight a permit above the key's assured share may
--              bring the group to
--   p_assured  acquire: the key's assured share
--   the others as for sluice_buckets_permit
-- Answers 'done (1 or 0),the key's (or the group's) weight in flight after the step,now in ms'.
DROP PROCEDURE IF EXISTS sluice_buckets_group_permit $$
CREATE PROCEDURE sluice_buckets_group_permit(p_op INT, p_group VARBINARY(1024),
    p_key VARBINARY(1536), p_id VARBINARY(255), p_weight INT, p_ceiling INT, p_limit INT,
    p_borrow INT, p_assured INT, p_lease_ms BIGINT, p_now BIGINT, p_lock_ms INT)
  MODIFIES SQL DATA
BEGIN
  DECLARE op_acquire INT DEFAULT 0;
  DECLARE op_renew INT DEFAULT 1;
  DECLARE op_release INT DEFAULT 2;
  DECLARE lk VARCHAR(64) CHARACTER SET ascii
    DEFAULT CONCAT('sluice:', MD5(CONCAT('sluice_buckets_group_permits ', p_group)));
  DECLARE now_ms BIGINT;
  DECLARE n BIGINT;
  DECLARE g BIGINT;
  DECLARE held INT;
  DECLARE done_ INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    DO RELEASE_LOCK(lk);
    RESIGNAL;
  END;
  -- READ COMMITTED: locking reads take no gap locks (first decisions on new keys never
  -- deadlock); they wait for the row a decision before this one wrote and has not committed.
  -- The transaction starts before the key is held, so that holding it takes fewer statements.
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF GET_LOCK(lk, p_lock_ms / 1000) IS NOT TRUE THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'sluice: timed out waiting for the group';
  END IF;
  SET now_ms = FLOOR(COALESCE(p_now, sluice_my1_now()) / 1000);
  DELETE FROM sluice_buckets_group_permits WHERE grp = p_group AND expires_at <= now_ms;
  SELECT COALESCE(SUM(weight), 0), COALESCE(SUM(IF(k = p_key, weight, 0)), 0) INTO g, n
    FROM sluice_buckets_group_permits WHERE grp = p_group FOR UPDATE;
  IF p_key IS NULL THEN
    SET n = g;
  ELSEIF p_op = op_acquire THEN
    -- a resent call finds its permit held and takes nothing twice
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND k = p_key AND id = p_id;
    IF held IS NOT NULL THEN
      SET done_ = 1;
    ELSEIF n + p_weight <= p_ceiling AND g + p_weight <= p_limit
        AND (n + p_weight <= p_assured OR g + p_weight <= p_borrow) THEN
      INSERT INTO sluice_buckets_group_permits (grp, k, id, weight, expires_at)
        VALUES (p_group, p_key, p_id, p_weight, now_ms + p_lease_ms);
      SET n = n + p_weight;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_renew THEN
    UPDATE sluice_buckets_group_permits SET expires_at = now_ms + p_lease_ms
      WHERE grp = p_group AND k = p_key AND id = p_id;
    SET done_ = IF(ROW_COUNT() > 0, 1, 0);
  ELSEIF p_op = op_release THEN
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND k = p_key AND id = p_id;
    IF held IS NOT NULL THEN
      DELETE FROM sluice_buckets_group_permits WHERE grp = p_group AND k = p_key AND id = p_id;
      SET n = n - held;
      SET done_ = 1;
    END IF;
  END IF;
  DO RELEASE_LOCK(lk);
  COMMIT;
  SELECT CONCAT(done_, ',', n, ',', now_ms);
END $$

DELIMITER ;

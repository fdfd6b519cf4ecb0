-- Sluice MySQL / MariaDB schema, version 2: cancelled permits (a ConcurrencyLimiter gives back
-- the permit of an acquire whose answer it did not get, docs/concurrency.md).
--
-- Applied after V1__sluice.sql (Flyway and Liquibase run them in order; createIfMissing(true)
-- and MysqlStore.schemaSql run them all). No table changes; the two permit procedures gain
-- op_cancel.
--
-- A cancel forgets the permit if it is held and, in any case, leaves a row of weight 0 for its id
-- until now plus the lease: an acquire of an id whose row weighs 0 takes nothing, so an acquire
-- that reaches the database after its cancel (a connection stuck behind the key's lock, a paused
-- server) holds nothing. A row of weight 0 adds nothing to a sum of weights and is pruned with the
-- others when its time has passed. A renew or release of a cancelled id changes nothing.

DELIMITER $$

-- One step on p_key's permits (the store's PermitStore calls), under a named lock on the key:
--   p_op       op_acquire, op_renew, op_release, op_count or op_cancel
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_lease_ms acquire, renew and cancel: the lease, from now
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
  DECLARE op_cancel INT DEFAULT 4;
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
      SET done_ = IF(held > 0, 1, 0);   -- held: a resent call; weight 0: after its cancel
    ELSEIF n + p_weight <= p_ceiling THEN
      INSERT INTO sluice_buckets_permits (k, id, weight, expires_at)
        VALUES (p_key, p_id, p_weight, now_ms + p_lease_ms);
      SET n = n + p_weight;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_renew THEN
    UPDATE sluice_buckets_permits SET expires_at = now_ms + p_lease_ms
      WHERE k = p_key AND id = p_id AND weight > 0;
    SET done_ = IF(ROW_COUNT() > 0, 1, 0);
  ELSEIF p_op = op_release THEN
    SELECT weight INTO held FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
    IF held > 0 THEN
      DELETE FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
      SET n = n - held;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_cancel THEN
    -- the permit goes if held; the id stays, weighing 0, until now plus the lease
    SELECT weight INTO held FROM sluice_buckets_permits WHERE k = p_key AND id = p_id;
    INSERT INTO sluice_buckets_permits (k, id, weight, expires_at)
      VALUES (p_key, p_id, 0, now_ms + p_lease_ms)
      ON DUPLICATE KEY UPDATE expires_at = IF(weight = 0,
        GREATEST(expires_at, VALUES(expires_at)), VALUES(expires_at)), weight = 0;
    IF held > 0 THEN
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
--   p_op       op_acquire, op_renew, op_release, op_count (p_key NULL: the group's count) or
--              op_cancel
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
  DECLARE op_cancel INT DEFAULT 4;
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
      SET done_ = IF(held > 0, 1, 0);   -- held: a resent call; weight 0: after its cancel
    ELSEIF n + p_weight <= p_ceiling AND g + p_weight <= p_limit
        AND (n + p_weight <= p_assured OR g + p_weight <= p_borrow) THEN
      INSERT INTO sluice_buckets_group_permits (grp, k, id, weight, expires_at)
        VALUES (p_group, p_key, p_id, p_weight, now_ms + p_lease_ms);
      SET n = n + p_weight;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_renew THEN
    UPDATE sluice_buckets_group_permits SET expires_at = now_ms + p_lease_ms
      WHERE grp = p_group AND k = p_key AND id = p_id AND weight > 0;
    SET done_ = IF(ROW_COUNT() > 0, 1, 0);
  ELSEIF p_op = op_release THEN
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND k = p_key AND id = p_id;
    IF held > 0 THEN
      DELETE FROM sluice_buckets_group_permits WHERE grp = p_group AND k = p_key AND id = p_id;
      SET n = n - held;
      SET done_ = 1;
    END IF;
  ELSEIF p_op = op_cancel THEN
    -- the permit goes if held; the id stays, weighing 0, until now plus the lease
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND k = p_key AND id = p_id;
    INSERT INTO sluice_buckets_group_permits (grp, k, id, weight, expires_at)
      VALUES (p_group, p_key, p_id, 0, now_ms + p_lease_ms)
      ON DUPLICATE KEY UPDATE expires_at = IF(weight = 0,
        GREATEST(expires_at, VALUES(expires_at)), VALUES(expires_at)), weight = 0;
    IF held > 0 THEN
      SET n = n - held;
      SET done_ = 1;
    END IF;
  END IF;
  DO RELEASE_LOCK(lk);
  COMMIT;
  SELECT CONCAT(done_, ',', n, ',', now_ms);
END $$

DELIMITER ;

ALTER TABLE sluice_buckets COMMENT='sluice schema 2';

-- Sluice PostgreSQL schema, version 9: cancelled permits (a ConcurrencyLimiter gives back the
-- permit of an acquire whose answer it did not get, docs/concurrency.md).
--
-- Applied after V1__sluice.sql to V8__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). No table changes; the two
-- permit functions gain op_cancel.
--
-- A cancel forgets the permit if it is held and, in any case, leaves a row of weight 0 for its id
-- until now plus the lease: an acquire of an id whose row weighs 0 takes nothing, so an acquire
-- that reaches the database after its cancel (a connection stuck behind the key's lock, a paused
-- server) holds nothing. A row of weight 0 adds nothing to a sum of weights; it is pruned with the
-- others when its time has passed. A renew or release of a cancelled id changes nothing.

-- One step on p_key's permits (the store's PermitStore calls):
--   p_op       op_acquire, op_renew, op_release, op_count or op_cancel
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_lease_ms acquire, renew and cancel: the lease, from now
--   p_now      microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
-- Returns {done (1 or 0), the key's weight in flight after the step, now in milliseconds}.
CREATE OR REPLACE FUNCTION sluice_buckets_permit(p_op int, p_key text, p_id text, p_weight int,
    p_ceiling int, p_lease_ms bigint, p_now bigint) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  op_acquire CONSTANT int := 0;
  op_renew   CONSTANT int := 1;
  op_release CONSTANT int := 2;
  op_cancel  CONSTANT int := 4;
  now_ms bigint := floor(COALESCE(p_now::numeric,
      (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint;
  n bigint;
  held int;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sluice_buckets_permits ' || p_key, 0));
  DELETE FROM sluice_buckets_permits WHERE key = p_key AND expires_at <= now_ms;
  SELECT COALESCE(sum(weight), 0) INTO n FROM sluice_buckets_permits WHERE key = p_key;
  IF p_op = op_acquire THEN
    -- a resent call finds its permit held and takes nothing twice; one after its cancel, nothing
    SELECT weight INTO held FROM sluice_buckets_permits WHERE key = p_key AND id = p_id;
    IF FOUND THEN
      RETURN ARRAY[CASE WHEN held > 0 THEN 1 ELSE 0 END, n, now_ms];
    END IF;
    IF n + p_weight > p_ceiling THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    INSERT INTO sluice_buckets_permits (key, id, weight, expires_at)
      VALUES (p_key, p_id, p_weight, now_ms + p_lease_ms);
    RETURN ARRAY[1, n + p_weight, now_ms];
  ELSIF p_op = op_renew THEN
    UPDATE sluice_buckets_permits SET expires_at = now_ms + p_lease_ms
      WHERE key = p_key AND id = p_id AND weight > 0;
    RETURN ARRAY[CASE WHEN FOUND THEN 1 ELSE 0 END, n, now_ms];
  ELSIF p_op = op_release THEN
    DELETE FROM sluice_buckets_permits WHERE key = p_key AND id = p_id AND weight > 0
      RETURNING weight INTO held;
    IF held IS NULL THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    RETURN ARRAY[1, n - held, now_ms];
  ELSIF p_op = op_cancel THEN
    SELECT weight INTO held FROM sluice_buckets_permits WHERE key = p_key AND id = p_id;
    INSERT INTO sluice_buckets_permits AS p (key, id, weight, expires_at)
      VALUES (p_key, p_id, 0, now_ms + p_lease_ms)
      ON CONFLICT (key, id) DO UPDATE SET weight = 0,
        expires_at = CASE WHEN p.weight = 0 THEN greatest(p.expires_at, excluded.expires_at)
                          ELSE excluded.expires_at END;
    IF COALESCE(held, 0) > 0 THEN
      RETURN ARRAY[1, n - held, now_ms];
    END IF;
    RETURN ARRAY[0, n, now_ms];
  END IF;
  RETURN ARRAY[0, n, now_ms];
END
$fn$;

-- One step on p_key's permits in p_group (the store's grouped PermitStore calls):
--   p_op       op_acquire, op_renew, op_release, op_count (p_key NULL: the group's count) or
--              op_cancel
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_limit    acquire: the most weight in flight the group holds
--   p_borrow   acquire: the most weight in flight a permit above the key's assured share may
--              bring the group to
--   p_assured  acquire: the key's assured share
--   p_lease_ms acquire, renew and cancel: the lease, from now
--   p_now      microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
-- Returns {done (1 or 0), the key's (or the group's) weight in flight after the step, now in ms}.
CREATE OR REPLACE FUNCTION sluice_buckets_group_permit(p_op int, p_group text, p_key text,
    p_id text, p_weight int, p_ceiling int, p_limit int, p_borrow int, p_assured int,
    p_lease_ms bigint, p_now bigint) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  op_acquire CONSTANT int := 0;
  op_renew   CONSTANT int := 1;
  op_release CONSTANT int := 2;
  op_cancel  CONSTANT int := 4;
  now_ms bigint := floor(COALESCE(p_now::numeric,
      (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint;
  n bigint;
  g bigint;
  held int;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sluice_buckets_group_permits ' || p_group, 0));
  DELETE FROM sluice_buckets_group_permits WHERE grp = p_group AND expires_at <= now_ms;
  SELECT COALESCE(sum(weight), 0), COALESCE(sum(weight) FILTER (WHERE key = p_key), 0)
    INTO g, n FROM sluice_buckets_group_permits WHERE grp = p_group;
  IF p_key IS NULL THEN
    RETURN ARRAY[0, g, now_ms];
  END IF;
  IF p_op = op_acquire THEN
    -- a resent call finds its permit held and takes nothing twice; one after its cancel, nothing
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND key = p_key AND id = p_id;
    IF FOUND THEN
      RETURN ARRAY[CASE WHEN held > 0 THEN 1 ELSE 0 END, n, now_ms];
    END IF;
    IF n + p_weight > p_ceiling OR g + p_weight > p_limit
        OR (n + p_weight > p_assured AND g + p_weight > p_borrow) THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    INSERT INTO sluice_buckets_group_permits (grp, key, id, weight, expires_at)
      VALUES (p_group, p_key, p_id, p_weight, now_ms + p_lease_ms);
    RETURN ARRAY[1, n + p_weight, now_ms];
  ELSIF p_op = op_renew THEN
    UPDATE sluice_buckets_group_permits SET expires_at = now_ms + p_lease_ms
      WHERE grp = p_group AND key = p_key AND id = p_id AND weight > 0;
    RETURN ARRAY[CASE WHEN FOUND THEN 1 ELSE 0 END, n, now_ms];
  ELSIF p_op = op_release THEN
    DELETE FROM sluice_buckets_group_permits
      WHERE grp = p_group AND key = p_key AND id = p_id AND weight > 0
      RETURNING weight INTO held;
    IF held IS NULL THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    RETURN ARRAY[1, n - held, now_ms];
  ELSIF p_op = op_cancel THEN
    SELECT weight INTO held FROM sluice_buckets_group_permits
      WHERE grp = p_group AND key = p_key AND id = p_id;
    INSERT INTO sluice_buckets_group_permits AS p (grp, key, id, weight, expires_at)
      VALUES (p_group, p_key, p_id, 0, now_ms + p_lease_ms)
      ON CONFLICT (grp, key, id) DO UPDATE SET weight = 0,
        expires_at = CASE WHEN p.weight = 0 THEN greatest(p.expires_at, excluded.expires_at)
                          ELSE excluded.expires_at END;
    IF COALESCE(held, 0) > 0 THEN
      RETURN ARRAY[1, n - held, now_ms];
    END IF;
    RETURN ARRAY[0, n, now_ms];
  END IF;
  RETURN ARRAY[0, n, now_ms];
END
$fn$;

COMMENT ON TABLE sluice_buckets IS 'sluice schema 9';

-- Sluice PostgreSQL schema, version 8: permits in groups (a ConcurrencyLimiter with a
-- ConcurrencyGroup on PostgreSQL, docs/concurrency.md).
--
-- Applied after V1__sluice.sql to V7__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). The other tables and their
-- functions are unchanged.
--
-- A grouped key's permits are rows of their own table, apart from the keys outside any group:
-- the group, the key, the permit's id, its weight and the instant its lease ends (milliseconds on
-- the database clock). Each acquire, renew and release is one call of the function below, one
-- atomic step under a transaction-scoped advisory lock on the group (the group's limit is checked
-- against every key of it, so the whole group serializes; other groups are not held up). Rows
-- whose lease ended under groups nobody asks about again are deleted by the store's pruning.

CREATE TABLE IF NOT EXISTS sluice_buckets_group_permits (
  grp        text   NOT NULL,
  key        text   NOT NULL,
  id         text   NOT NULL,
  weight     int    NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (grp, key, id)
);
CREATE INDEX IF NOT EXISTS sluice_buckets_group_permits_expires_at
  ON sluice_buckets_group_permits (expires_at);

-- One step on p_key's permits in p_group (the store's grouped PermitStore calls):
--   p_op       op_acquire, op_renew, op_release or op_count (p_key NULL: the group's count)
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_limit    acquire: the most weight in flight the group holds
--   p_borrow   acquire: the most weight in flight a permit above the key's assured share may
--              bring the group to
--   p_assured  acquire: the key's assured share
--   p_lease_ms acquire and renew: the lease, from now
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
    -- a resent call finds its permit held and takes nothing twice
    PERFORM 1 FROM sluice_buckets_group_permits WHERE grp = p_group AND key = p_key AND id = p_id;
    IF FOUND THEN
      RETURN ARRAY[1, n, now_ms];
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
      WHERE grp = p_group AND key = p_key AND id = p_id;
    RETURN ARRAY[CASE WHEN FOUND THEN 1 ELSE 0 END, n, now_ms];
  ELSIF p_op = op_release THEN
    DELETE FROM sluice_buckets_group_permits WHERE grp = p_group AND key = p_key AND id = p_id
      RETURNING weight INTO held;
    IF held IS NULL THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    RETURN ARRAY[1, n - held, now_ms];
  END IF;
  RETURN ARRAY[0, n, now_ms];
END
$fn$;

COMMENT ON TABLE sluice_buckets IS 'sluice schema 8';

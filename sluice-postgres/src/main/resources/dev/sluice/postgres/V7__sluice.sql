-- Sluice PostgreSQL schema, version 7: permits in flight (a ConcurrencyLimiter on PostgreSQL,
-- docs/concurrency.md).
--
-- Applied after V1__sluice.sql to V6__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). The other tables and their
-- functions are unchanged.
--
-- A key's permits are rows: the permit's id, its weight, and the instant its lease ends, in
-- milliseconds on the database clock. Each acquire, renew and release is one call of the function
-- below, one atomic step: it takes a transaction-scoped advisory lock on the key (two
-- acquisitions of one key never both see room; other keys are not held up, but for the rare
-- keys whose 64-bit hashes meet), deletes the key's permits whose lease has ended, and acts. A key
-- with no permits has no rows; rows whose lease ended under keys nobody asks about again are
-- deleted by the store's pruning.

CREATE TABLE IF NOT EXISTS sluice_buckets_permits (
  key        text   NOT NULL,
  id         text   NOT NULL,
  weight     int    NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, id)
);
CREATE INDEX IF NOT EXISTS sluice_buckets_permits_expires_at
  ON sluice_buckets_permits (expires_at);

-- One step on p_key's permits (the store's PermitStore calls):
--   p_op       op_acquire, op_renew, op_release or op_count
--   p_id       the permit's id; p_weight its weight
--   p_ceiling  acquire: the most weight in flight it may bring the key to
--   p_lease_ms acquire and renew: the lease, from now
--   p_now      microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
-- Returns {done (1 or 0), the key's weight in flight after the step, now in milliseconds}.
CREATE OR REPLACE FUNCTION sluice_buckets_permit(p_op int, p_key text, p_id text, p_weight int,
    p_ceiling int, p_lease_ms bigint, p_now bigint) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  op_acquire CONSTANT int := 0;
  op_renew   CONSTANT int := 1;
  op_release CONSTANT int := 2;
  now_ms bigint := floor(COALESCE(p_now::numeric,
      (extract(epoch FROM clock_timestamp()) * 1000000)::numeric) / 1000)::bigint;
  n bigint;
  held int;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sluice_buckets_permits ' || p_key, 0));
  DELETE FROM sluice_buckets_permits WHERE key = p_key AND expires_at <= now_ms;
  SELECT COALESCE(sum(weight), 0) INTO n FROM sluice_buckets_permits WHERE key = p_key;
  IF p_op = op_acquire THEN
    -- a resent call finds its permit held and takes nothing twice
    PERFORM 1 FROM sluice_buckets_permits WHERE key = p_key AND id = p_id;
    IF FOUND THEN
      RETURN ARRAY[1, n, now_ms];
    END IF;
    IF n + p_weight > p_ceiling THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    INSERT INTO sluice_buckets_permits (key, id, weight, expires_at)
      VALUES (p_key, p_id, p_weight, now_ms + p_lease_ms);
    RETURN ARRAY[1, n + p_weight, now_ms];
  ELSIF p_op = op_renew THEN
    UPDATE sluice_buckets_permits SET expires_at = now_ms + p_lease_ms
      WHERE key = p_key AND id = p_id;
    RETURN ARRAY[CASE WHEN FOUND THEN 1 ELSE 0 END, n, now_ms];
  ELSIF p_op = op_release THEN
    DELETE FROM sluice_buckets_permits WHERE key = p_key AND id = p_id RETURNING weight INTO held;
    IF held IS NULL THEN
      RETURN ARRAY[0, n, now_ms];
    END IF;
    RETURN ARRAY[1, n - held, now_ms];
  END IF;
  RETURN ARRAY[0, n, now_ms];
END
$fn$;

COMMENT ON TABLE sluice_buckets IS 'sluice schema 7';

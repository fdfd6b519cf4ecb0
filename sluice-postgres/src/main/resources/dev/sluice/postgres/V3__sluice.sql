-- Sluice PostgreSQL schema, version 3: the live instances of a fleet (fleet mode, docs/fleet.md).
--
-- Applied after V1__sluice.sql and V2__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). The buckets table and its
-- function are unchanged. Each fleet-mode limiter records, every half lease lifetime, that it is
-- alive until an expiry on the database clock; the count of the fleet's live instances divides
-- each instance's share of the bound on what the fleet admits beyond a limit.

CREATE TABLE IF NOT EXISTS sluice_buckets_instances (
  fleet      text        NOT NULL,
  instance   text        NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (fleet, instance)
);

-- Records that p_instance of p_fleet is alive for p_ttl_ms from now (p_now: microseconds since
-- the epoch, or NULL for clock_timestamp(); a test hook), forgets the fleet's expired instances,
-- and returns how many are alive, this one included.
CREATE OR REPLACE FUNCTION sluice_buckets_live_instances(p_fleet text, p_instance text,
    p_ttl_ms bigint, p_now bigint) RETURNS int
  LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz := COALESCE(to_timestamp(p_now::float8 / 1000000), clock_timestamp());
  n int;
BEGIN
  DELETE FROM sluice_buckets_instances WHERE fleet = p_fleet AND expires_at <= t;
  INSERT INTO sluice_buckets_instances AS i (fleet, instance, expires_at)
    VALUES (p_fleet, p_instance, t + p_ttl_ms * interval '1 millisecond')
    ON CONFLICT (fleet, instance) DO UPDATE SET expires_at = EXCLUDED.expires_at;
  SELECT count(*) INTO n FROM sluice_buckets_instances WHERE fleet = p_fleet;
  RETURN n;
END
$fn$;

COMMENT ON TABLE sluice_buckets IS 'sluice schema 3';

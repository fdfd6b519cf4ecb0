-- Sluice's PostgreSQL schema at version 9, for a fresh install: what V1__ to V9__sluice.sql
-- leave, each function in its newest form only (they wrote some functions several times over).
-- PostgresStore runs this file, with the table's name in place of sluice_buckets, when it
-- creates a table (createIfMissing); an existing table takes the V files it lacks, in order.
-- PostgresSchemaTest checks that the two ways end in the same tables, indexes and functions.
-- Run it with psql on an empty database, or the V files in order (Flyway does that).


-- from V1
CREATE TABLE IF NOT EXISTS sluice_buckets (
  key        text        PRIMARY KEY,
  layout     text        NOT NULL,
  state      bigint[]    NOT NULL,
  expires_at timestamptz NOT NULL
) WITH (fillfactor = 80);

-- from V1
CREATE INDEX IF NOT EXISTS sluice_buckets_expires_at ON sluice_buckets (expires_at);

-- from V3
CREATE TABLE IF NOT EXISTS sluice_buckets_instances (
  fleet      text        NOT NULL,
  instance   text        NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (fleet, instance)
);

-- from V4
CREATE TABLE IF NOT EXISTS sluice_buckets_groups (
  grp        text        NOT NULL,
  key        text        NOT NULL,
  layout     text        NOT NULL,
  state      bigint[]    NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (grp, key)
);

-- from V4
CREATE INDEX IF NOT EXISTS sluice_buckets_groups_expires_at
  ON sluice_buckets_groups (expires_at);

-- from V7
CREATE TABLE IF NOT EXISTS sluice_buckets_permits (
  key        text   NOT NULL,
  id         text   NOT NULL,
  weight     int    NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, id)
);

-- from V7
CREATE INDEX IF NOT EXISTS sluice_buckets_permits_expires_at
  ON sluice_buckets_permits (expires_at);

-- from V8
CREATE TABLE IF NOT EXISTS sluice_buckets_group_permits (
  grp        text   NOT NULL,
  key        text   NOT NULL,
  id         text   NOT NULL,
  weight     int    NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (grp, key, id)
);

-- from V8
CREATE INDEX IF NOT EXISTS sluice_buckets_group_permits_expires_at
  ON sluice_buckets_group_permits (expires_at);

-- from V1
-- Pure helpers, shared by every Sluice table of this version.
CREATE OR REPLACE FUNCTION sluice_v1_add(a bigint, b bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT LEAST(a + b, 9007199254740991)';

-- from V1
CREATE OR REPLACE FUNCTION sluice_v1_pdiff(a bigint, b bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT GREATEST(a - b, 0)';

-- from V1
-- Time from now until t; 0 when t is "none" or past.
CREATE OR REPLACE FUNCTION sluice_v1_until(t bigint, now bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS 'SELECT CASE WHEN t = -9007199254740992 THEN 0 ELSE GREATEST(t - now, 0) END';

-- from V1
-- The start of the window of length w that contains now.
CREATE OR REPLACE FUNCTION sluice_v1_aligned(now bigint, w bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT now - (((now % w) + w) % w)';

-- from V1
-- A fixed window's count at now.
CREATE OR REPLACE FUNCTION sluice_v1_fixed_count(st bigint, cnt bigint, now bigint, w bigint)
  RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS 'SELECT CASE WHEN st = -9007199254740992 OR now >= sluice_v1_add(st, w) THEN 0 ELSE cnt END';

-- from V1
-- A sliding window rolled forward to now: [start, previous, current].
CREATE OR REPLACE FUNCTION sluice_v1_roll(st bigint, prev bigint, curr bigint, now bigint, w bigint)
  RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN st = -9007199254740992 OR sluice_v1_aligned(now, w) > sluice_v1_add(st, w)
      THEN ARRAY[sluice_v1_aligned(now, w), 0, 0]
    WHEN sluice_v1_aligned(now, w) = sluice_v1_add(st, w)
      THEN ARRAY[sluice_v1_aligned(now, w), curr, 0]
    ELSE ARRAY[st, prev, curr]
  END
$$;

-- from V1
-- The sliding estimate plus q, in IEEE doubles, in exactly the order core computes it.
CREATE OR REPLACE FUNCTION sluice_v1_sliding(st bigint, prev bigint, curr bigint, now bigint,
    w bigint, q bigint) RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN st = -9007199254740992 OR sluice_v1_aligned(now, w) > sluice_v1_add(st, w)
      THEN q::float8
    WHEN sluice_v1_aligned(now, w) = sluice_v1_add(st, w)
      THEN curr::float8 * (w - GREATEST(0, LEAST(w, now - sluice_v1_aligned(now, w))))::float8
             / w::float8 + q::float8
    ELSE prev::float8 * (w - GREATEST(0, LEAST(w, now - st)))::float8 / w::float8
           + (curr + q)::float8
  END
$$;

-- from V3
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

-- from V6
-- The bucket's rule. A bucket empty at e (a tick of microseconds; r the steps rounding e up
-- added, 0 at scale 1) holds, at now, sc * (e - now) - r steps while e > now, else 0, at most
-- 2^52 steps (StoreProtocol.SCRIPT_BIG; -2^53 is SCRIPT_NONE, "no time").
CREATE OR REPLACE FUNCTION sluice_v6_backlog(e bigint, r bigint, sc bigint, now bigint)
  RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN e = -9007199254740992 OR e <= now THEN 0
    WHEN e - now > 4503599627370496 / sc THEN 4503599627370496
    WHEN sc = 1 THEN e - now
    ELSE (e - now) * sc - LEAST(r, sc - 1)
  END
$$;

-- from V6
-- A bucket holding b steps admits q more when they fit below its capacity.
CREATE OR REPLACE FUNCTION sluice_v6_admits(b bigint, q bigint, cap bigint) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT sluice_v1_add(b, q) <= cap';

-- from V6
-- Holding st steps of 1/sc tick, a bucket is empty this many whole ticks from now (rounded up).
CREATE OR REPLACE FUNCTION sluice_v6_ticks_up(st bigint, sc bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT (st + sc - 1) / sc';

-- from V6
-- One decision, atomically, on the database clock: a port of core's Engine (docs/semantics.md).
-- It locks the key's row (if any) for the few microseconds of the computation, writes only when
-- the state changes, deletes the row when it becomes empty, and returns {now, state before}:
-- core rebuilds the decision and its figures from that.
--   p_op      the operation's code (c_try_acquire ... c_release)
--   p_now     microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
--   p_layout  the limits' layout letters, e.g. 'bs' ('r': a bucket counted in steps of 1/scale
--             of a tick, with state [E, R])
--   p_args    per limit c_args_per_limit arguments (c_arg_*: kind, capacity, window, penalty,
--             quantum, scale); then (c_after_limits_count) the count of grains a lease asks for
--             or a release gives back (1 otherwise)
--   p_lock_ms lock_timeout for this decision, 0 for none
CREATE OR REPLACE FUNCTION sluice_buckets_decide(p_key text, p_op int, p_now bigint,
    p_layout text, p_args bigint[], p_lock_ms int) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  c_script_none CONSTANT bigint := -9007199254740992;
  c_script_big CONSTANT bigint := 4503599627370496;
  c_try_acquire CONSTANT int := 0;
  c_check CONSTANT int := 1;
  c_fill_up CONSTANT int := 2;
  c_reserve CONSTANT int := 3;
  c_lease CONSTANT int := 4;
  c_release CONSTANT int := 5;
  c_bucket CONSTANT int := 0;
  c_fixed_window CONSTANT int := 1;
  c_sliding_window CONSTANT int := 2;
  c_arg_kind CONSTANT int := 0;
  c_arg_capacity CONSTANT int := 1;
  c_arg_window CONSTANT int := 2;
  c_arg_penalty CONSTANT int := 3;
  c_arg_quantum CONSTANT int := 4;
  c_arg_scale CONSTANT int := 5;
  c_args_per_limit CONSTANT int := 6;
  c_after_limits_count CONSTANT int := 0;
  c_after_limits_reserve CONSTANT int := 1;
  c_bucket_empty_at CONSTANT int := 0;
  c_bucket_remainder CONSTANT int := 1;
  c_fixed_start CONSTANT int := 0;
  c_fixed_count CONSTANT int := 1;
  c_fixed_blocked_until CONSTANT int := 2;
  c_sliding_start CONSTANT int := 0;
  c_sliding_previous CONSTANT int := 1;
  c_sliding_current CONSTANT int := 2;
  c_sliding_blocked_until CONSTANT int := 3;
  c_bucket_slots CONSTANT int := 1;
  c_scaled_bucket_slots CONSTANT int := 2;
  c_fixed_window_slots CONSTANT int := 3;
  c_sliding_window_slots CONSTANT int := 4;
  n int := length(p_layout);
  after int;   -- p_args' index before the arguments after the limits'
  kind int[]; cap bigint[]; w bigint[]; pen bigint[]; q bigint[]; sc bigint[]; o int[]; ns int[];
  total int := 0;
  s bigint[]; nx bigint[]; r bigint[];
  stored_layout text; stored bigint[];
  have_row boolean;
  now bigint; departure bigint;
  qt bigint[];
  ok boolean[]; all_ok boolean; want_pen boolean; bk bigint[];
  i int; a int;
  bl bigint; filled bigint; cnt bigint; est float8;
  idle bigint; part bigint; stop bigint; d bigint; t bigint; st bigint;
  want bigint; granted bigint; room bigint;
  attempt int := 0;
BEGIN
  IF p_lock_ms > 0 THEN
    PERFORM set_config('lock_timeout', p_lock_ms::text, true);
  END IF;

  -- The common case, one bucket (leaky, token or GCRA) of scale 1 without a penalty, asked to
  -- admit or to check: the same decision as the general path below, by the same bucket rule
  -- (sluice_v6_backlog, sluice_v6_admits), without its arrays and loops.
  IF p_layout = 'b' AND p_op <= c_check AND p_args[c_arg_penalty + 1] = 0 THEN
    LOOP
      attempt := attempt + 1;
      SELECT t.layout, t.state INTO stored_layout, stored
        FROM sluice_buckets t WHERE t.key = p_key FOR UPDATE;
      have_row := FOUND;
      now := COALESCE(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
      IF have_row AND stored_layout = 'b' AND cardinality(stored) = c_bucket_slots THEN
        departure := stored[1 + c_bucket_empty_at];
      ELSE
        departure := c_script_none;
      END IF;
      IF p_op = c_check THEN
        RETURN ARRAY[now, departure];
      END IF;
      bl := sluice_v6_backlog(departure, 0, 1, now);
      IF NOT sluice_v6_admits(bl, p_args[c_arg_quantum + 1], p_args[c_arg_capacity + 1]) THEN
        RETURN ARRAY[now, departure];   -- rejected: nothing changes
      END IF;
      stop := sluice_v1_add(now, sluice_v6_ticks_up(sluice_v1_add(bl, p_args[c_arg_quantum + 1]), 1));
      IF stop = departure THEN
        RETURN ARRAY[now, departure];
      ELSIF stop <= now THEN
        IF have_row THEN
          DELETE FROM sluice_buckets WHERE key = p_key;
        END IF;
        RETURN ARRAY[now, departure];
      ELSIF have_row THEN
        UPDATE sluice_buckets
           SET layout = p_layout, state = ARRAY[stop],
               expires_at = to_timestamp((stop / 1000000 + 1)::float8)
         WHERE key = p_key;
        RETURN ARRAY[now, departure];
      END IF;
      INSERT INTO sluice_buckets (key, layout, state, expires_at)
      VALUES (p_key, p_layout, ARRAY[stop], to_timestamp((stop / 1000000 + 1)::float8))
      ON CONFLICT (key) DO NOTHING;
      IF FOUND THEN
        RETURN ARRAY[now, departure];
      END IF;
      -- another decision created the row first: decide again, on its row
      IF attempt >= 3 THEN
        RAISE EXCEPTION 'sluice: key % kept changing under this decision', p_key
          USING ERRCODE = '40001';
      END IF;
    END LOOP;
  END IF;

  FOR i IN 1..n LOOP
    a := (i - 1) * c_args_per_limit + 1;   -- p_args' index of the limit's first argument
    kind[i] := p_args[a + c_arg_kind]; cap[i] := p_args[a + c_arg_capacity];
    w[i] := p_args[a + c_arg_window]; pen[i] := p_args[a + c_arg_penalty];
    q[i] := p_args[a + c_arg_quantum]; sc[i] := p_args[a + c_arg_scale];
    ns[i] := CASE kind[i]
      WHEN c_bucket THEN CASE WHEN sc[i] = 1 THEN c_bucket_slots ELSE c_scaled_bucket_slots END
      WHEN c_fixed_window THEN c_fixed_window_slots
      ELSE c_sliding_window_slots END;
    o[i] := total + 1;   -- s' index of the limit's first slot
    total := total + ns[i];
  END LOOP;
  after := c_args_per_limit * n + 1;

  LOOP
    attempt := attempt + 1;
    SELECT t.layout, t.state INTO stored_layout, stored
      FROM sluice_buckets t WHERE t.key = p_key FOR UPDATE;
    have_row := FOUND;
    -- The clock is read once the row is locked: decisions on one key commit in clock order.
    now := COALESCE(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
    IF have_row AND stored_layout = p_layout AND cardinality(stored) = total THEN
      s := stored;
    ELSE
      s := array_fill(0::bigint, ARRAY[total]);
      FOR i IN 1..n LOOP   -- Rules.initialize: no time in every time slot, counts 0
        IF kind[i] = c_bucket THEN
          s[o[i] + c_bucket_empty_at] := c_script_none;
        ELSIF kind[i] = c_fixed_window THEN
          s[o[i] + c_fixed_start] := c_script_none;
          s[o[i] + c_fixed_blocked_until] := c_script_none;
        ELSE
          s[o[i] + c_sliding_start] := c_script_none;
          s[o[i] + c_sliding_blocked_until] := c_script_none;
        END IF;
      END LOOP;
    END IF;
    nx := s;

    -- The general path: core's Engine.decide, step by step (fits; then fill, charge or
    -- penalize; then reset_after), and within each step one section per kind in the order of
    -- core's rules classes and of decide.lua's sections: bucket (BucketRules), fixed window
    -- (FixedWindowRules), sliding window (SlidingWindowRules).

    -- BucketRules.backlog, by the one bucket rule
    FOR i IN 1..n LOOP
      IF kind[i] = c_bucket THEN
        bk[i] := sluice_v6_backlog(s[o[i] + c_bucket_empty_at],
          CASE WHEN sc[i] = 1 THEN 0 ELSE s[o[i] + c_bucket_remainder] END, sc[i], now);
      END IF;
    END LOOP;

    IF p_op = c_lease OR p_op = c_release THEN
      -- leases (Engine.lease): buckets only; as many grains of q as every limit holds room
      -- for, charged as admissions are; a release gives grains back, never below empty, and
      -- leaves a penalty's hold alone
      want := p_args[after + c_after_limits_count];
      granted := want;
      FOR i IN 1..n LOOP
        IF p_op = c_lease THEN
          room := cap[i] - bk[i];
          granted := LEAST(granted, CASE WHEN room <= 0 THEN 0 ELSE room / q[i] END);
        END IF;
      END LOOP;
      IF want > 0 AND granted > 0 THEN
        FOR i IN 1..n LOOP
          st := NULL;
          IF p_op = c_lease THEN
            st := bk[i] + granted * q[i];
          ELSIF bk[i] > 0 AND bk[i] <= cap[i] THEN
            st := bk[i] - CASE WHEN want > bk[i] / q[i] THEN bk[i] ELSE want * q[i] END;
          END IF;
          IF st IS NOT NULL THEN
            t := sluice_v6_ticks_up(st, sc[i]);
            nx[o[i] + c_bucket_empty_at] := sluice_v1_add(now, t);
            IF sc[i] <> 1 THEN
              nx[o[i] + c_bucket_remainder] := t * sc[i] - st;
            END IF;
          END IF;
        END LOOP;
      END IF;
    ELSE
      -- reserve (Engine.queues): a limit's queue ahead of the request, in its steps, is the
      -- longest backlog among the limits of its scale, and the others' waits in whole ticks
      IF p_op = c_reserve THEN
        FOR i IN 1..n LOOP
          qt[i] := 0;
          FOR a IN 1..n LOOP
            IF sc[a] = sc[i] THEN
              d := bk[a];
            ELSE
              d := sluice_v6_ticks_up(bk[a], sc[a]);
              d := CASE WHEN d > c_script_big / sc[i] THEN c_script_big ELSE d * sc[i] END;
            END IF;
            qt[i] := GREATEST(qt[i], d);
          END LOOP;
        END LOOP;
      END IF;
      -- fits (Rules.fits; reserve: Engine.queues) ---------------------------------------------------
      all_ok := true;
      FOR i IN 1..n LOOP
        IF kind[i] = c_bucket THEN
          ok[i] := sluice_v6_admits(CASE WHEN p_op = c_reserve THEN qt[i] ELSE bk[i] END, q[i],
            cap[i]);
        ELSIF kind[i] = c_fixed_window THEN
          ok[i] := sluice_v1_until(s[o[i] + c_fixed_blocked_until], now) = 0
            AND sluice_v1_fixed_count(s[o[i] + c_fixed_start], s[o[i] + c_fixed_count], now, w[i])
              + q[i] <= cap[i];
        ELSE
          ok[i] := sluice_v1_until(s[o[i] + c_sliding_blocked_until], now) = 0
            AND sluice_v1_sliding(s[o[i] + c_sliding_start], s[o[i] + c_sliding_previous],
              s[o[i] + c_sliding_current], now, w[i], q[i]) <= cap[i]::float8;
        END IF;
        all_ok := all_ok AND ok[i];
      END LOOP;

      -- fill, charge, penalize (Rules.fill, Rules.charge, Rules.penalize) -----------------------
      -- A penalty starts after an overflow (a rejection, or a fill-up that reaches capacity) of
      -- a cost that could fit, only when none is in force.
      FOR i IN 1..n LOOP
        want_pen := false;
        IF kind[i] = c_bucket THEN
          st := NULL;   -- the backlog to hold, in steps; NULL: unchanged
          IF p_op = c_fill_up THEN
            filled := sluice_v1_add(bk[i], q[i]);
            st := GREATEST(bk[i], LEAST(cap[i], filled));
            want_pen := filled >= cap[i] AND q[i] <= cap[i];
          ELSIF p_op <> c_check AND all_ok THEN
            st := sluice_v1_add(CASE WHEN p_op = c_reserve THEN qt[i] ELSE bk[i] END, q[i]);
          ELSIF p_op <> c_check THEN
            want_pen := (NOT ok[i]) AND q[i] <= cap[i];
          END IF;
          IF want_pen AND pen[i] > 0 AND bk[i] <= cap[i] THEN
            st := cap[i] + pen[i];   -- held full for the penalty
          END IF;
          IF st IS NOT NULL THEN
            -- BucketRules.hold: E = now + the steps in ticks rounded up, R = what that added
            t := sluice_v6_ticks_up(st, sc[i]);
            nx[o[i] + c_bucket_empty_at] := sluice_v1_add(now, t);
            IF sc[i] <> 1 THEN
              nx[o[i] + c_bucket_remainder] := t * sc[i] - st;
            END IF;
          END IF;
        ELSIF kind[i] = c_fixed_window THEN
          IF p_op = c_fill_up THEN
            cnt := sluice_v1_fixed_count(s[o[i] + c_fixed_start], s[o[i] + c_fixed_count], now, w[i]);
            IF s[o[i] + c_fixed_start] = c_script_none
                OR now >= sluice_v1_add(s[o[i] + c_fixed_start], w[i]) THEN
              nx[o[i] + c_fixed_start] := now;
            END IF;
            nx[o[i] + c_fixed_count] := GREATEST(cnt, LEAST(cap[i], cnt + q[i]));
            want_pen := cnt + q[i] >= cap[i] AND q[i] <= cap[i];
          ELSIF p_op <> c_check AND all_ok THEN
            IF s[o[i] + c_fixed_start] = c_script_none
                OR now >= sluice_v1_add(s[o[i] + c_fixed_start], w[i]) THEN
              nx[o[i] + c_fixed_start] := now;
              nx[o[i] + c_fixed_count] := q[i];
            ELSE
              nx[o[i] + c_fixed_count] := s[o[i] + c_fixed_count] + q[i];
            END IF;
          ELSIF p_op <> c_check THEN
            want_pen := (NOT ok[i]) AND q[i] <= cap[i];
          END IF;
          IF want_pen AND pen[i] > 0 AND sluice_v1_until(s[o[i] + c_fixed_blocked_until], now) = 0 THEN
            nx[o[i] + c_fixed_blocked_until] := sluice_v1_add(now, pen[i]);
          END IF;
        ELSE
          -- r: the window rolled to now, [start, previous, current] (sluice_v1_roll)
          IF p_op = c_fill_up THEN
            est := sluice_v1_sliding(s[o[i] + c_sliding_start], s[o[i] + c_sliding_previous],
              s[o[i] + c_sliding_current], now, w[i], q[i]);
            r := sluice_v1_roll(s[o[i] + c_sliding_start], s[o[i] + c_sliding_previous],
              s[o[i] + c_sliding_current], now, w[i]);
            nx[o[i] + c_sliding_start] := r[1];
            nx[o[i] + c_sliding_previous] := r[2];
            nx[o[i] + c_sliding_current] := GREATEST(r[3], LEAST(cap[i], r[3] + q[i]));
            want_pen := ((NOT (est <= cap[i]::float8)) OR est >= cap[i]::float8) AND q[i] <= cap[i];
          ELSIF p_op <> c_check AND all_ok THEN
            r := sluice_v1_roll(s[o[i] + c_sliding_start], s[o[i] + c_sliding_previous],
              s[o[i] + c_sliding_current], now, w[i]);
            nx[o[i] + c_sliding_start] := r[1];
            nx[o[i] + c_sliding_previous] := r[2];
            nx[o[i] + c_sliding_current] := r[3] + q[i];
          ELSIF p_op <> c_check THEN
            want_pen := (NOT ok[i]) AND q[i] <= cap[i];
          END IF;
          IF want_pen AND pen[i] > 0
              AND sluice_v1_until(s[o[i] + c_sliding_blocked_until], now) = 0 THEN
            nx[o[i] + c_sliding_blocked_until] := sluice_v1_add(now, pen[i]);
          END IF;
        END IF;
      END LOOP;
    END IF;

    IF nx IS DISTINCT FROM s THEN
      -- reset_after (Rules.resetAfter): how long until the new state holds nothing ----------
      idle := 0;
      FOR i IN 1..n LOOP
        IF kind[i] = c_bucket THEN
          part := sluice_v1_until(nx[o[i] + c_bucket_empty_at], now);
        ELSIF kind[i] = c_fixed_window THEN
          part := sluice_v1_until(nx[o[i] + c_fixed_blocked_until], now);
          IF sluice_v1_fixed_count(nx[o[i] + c_fixed_start], nx[o[i] + c_fixed_count], now,
              w[i]) > 0 THEN
            part := GREATEST(part,
              sluice_v1_pdiff(sluice_v1_add(nx[o[i] + c_fixed_start], w[i]), now));
          END IF;
        ELSE
          r := sluice_v1_roll(nx[o[i] + c_sliding_start], nx[o[i] + c_sliding_previous],
            nx[o[i] + c_sliding_current], now, w[i]);
          stop := now;
          IF r[3] > 0 THEN
            stop := sluice_v1_add(r[1], 2 * w[i]);
          ELSIF r[2] > 0 THEN
            stop := sluice_v1_add(r[1], w[i]);
          END IF;
          part := GREATEST(sluice_v1_until(nx[o[i] + c_sliding_blocked_until], now),
            sluice_v1_pdiff(stop, now));
        END IF;
        idle := GREATEST(idle, part);
      END LOOP;
      IF idle <= 0 THEN
        IF have_row THEN
          DELETE FROM sluice_buckets WHERE key = p_key;
        END IF;
      ELSIF have_row THEN
        UPDATE sluice_buckets
           SET layout = p_layout, state = nx,
               expires_at = to_timestamp(((now + idle) / 1000000 + 1)::float8)
         WHERE key = p_key;
      ELSE
        INSERT INTO sluice_buckets (key, layout, state, expires_at)
        VALUES (p_key, p_layout, nx, to_timestamp(((now + idle) / 1000000 + 1)::float8))
        ON CONFLICT (key) DO NOTHING;
        IF NOT FOUND THEN
          -- another decision created the row first: decide again, on its row
          IF attempt >= 3 THEN
            RAISE EXCEPTION 'sluice: key % kept changing under this decision', p_key
              USING ERRCODE = '40001';
          END IF;
          CONTINUE;
        END IF;
      END IF;
    END IF;
    RETURN array_prepend(now, s);
  END LOOP;
END
$fn$;

-- from V6
-- One group's decision, atomically, on the database clock: a port of core's GroupLimits.decide.
-- It locks the group's parent row, then the key's (always in that order, so decisions never
-- deadlock), writes each that changed, deletes a row whose buckets are empty, and returns
-- {now, the key's slots, the parent's slots} as they were before: core rebuilds the decision.
--   p_op      c_try_acquire or c_check (no other operation applies to a group)
--   p_layout  the limits' layout letters: the assured limit, the ceilings, last the parent
--             (all buckets: 'b', or 'r' for a scale above 1, state [E, R])
--   p_args    per limit c_args_per_limit arguments (c_arg_*); then c_after_limits_count, the
--             count (1), and c_after_limits_reserve, the parent's steps only assured traffic may
--             fill
-- A first decision that races another to create a row raises a serialization failure (40001),
-- rolling back everything; the store decides again.
CREATE OR REPLACE FUNCTION sluice_buckets_decide_group(p_group text, p_key text, p_op int,
    p_now bigint, p_layout text, p_args bigint[], p_lock_ms int) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  c_script_none CONSTANT bigint := -9007199254740992;
  c_script_big CONSTANT bigint := 4503599627370496;
  c_try_acquire CONSTANT int := 0;
  c_check CONSTANT int := 1;
  c_fill_up CONSTANT int := 2;
  c_reserve CONSTANT int := 3;
  c_lease CONSTANT int := 4;
  c_release CONSTANT int := 5;
  c_bucket CONSTANT int := 0;
  c_fixed_window CONSTANT int := 1;
  c_sliding_window CONSTANT int := 2;
  c_arg_kind CONSTANT int := 0;
  c_arg_capacity CONSTANT int := 1;
  c_arg_window CONSTANT int := 2;
  c_arg_penalty CONSTANT int := 3;
  c_arg_quantum CONSTANT int := 4;
  c_arg_scale CONSTANT int := 5;
  c_args_per_limit CONSTANT int := 6;
  c_after_limits_count CONSTANT int := 0;
  c_after_limits_reserve CONSTANT int := 1;
  c_bucket_empty_at CONSTANT int := 0;
  c_bucket_remainder CONSTANT int := 1;
  c_fixed_start CONSTANT int := 0;
  c_fixed_count CONSTANT int := 1;
  c_fixed_blocked_until CONSTANT int := 2;
  c_sliding_start CONSTANT int := 0;
  c_sliding_previous CONSTANT int := 1;
  c_sliding_current CONSTANT int := 2;
  c_sliding_blocked_until CONSTANT int := 3;
  c_bucket_slots CONSTANT int := 1;
  c_scaled_bucket_slots CONSTANT int := 2;
  c_fixed_window_slots CONSTANT int := 3;
  c_sliding_window_slots CONSTANT int := 4;
  n int := length(p_layout);
  cap bigint[]; q bigint[]; sc bigint[]; o int[]; ns int[];
  total int := 0;
  ks int;
  reserve bigint;
  s bigint[]; nx bigint[]; bk bigint[];
  g_layout text; g_state bigint[]; have_g boolean;
  k_layout text; k_state bigint[]; have_k boolean;
  now bigint;
  ceilings boolean := true; assured boolean; borrowed boolean;
  i int; a int; d bigint; st bigint; t bigint; idle bigint; first int;
BEGIN
  IF p_lock_ms > 0 THEN
    PERFORM set_config('lock_timeout', p_lock_ms::text, true);
  END IF;
  FOR i IN 1..n LOOP
    a := (i - 1) * c_args_per_limit + 1;   -- p_args' index of the limit's first argument
    cap[i] := p_args[a + c_arg_capacity]; q[i] := p_args[a + c_arg_quantum];
    sc[i] := p_args[a + c_arg_scale];
    ns[i] := CASE WHEN sc[i] = 1 THEN c_bucket_slots ELSE c_scaled_bucket_slots END;
    o[i] := total + 1;   -- s' index of the limit's first slot
    total := total + ns[i];
  END LOOP;
  ks := o[n] - 1;
  reserve := p_args[c_args_per_limit * n + 1 + c_after_limits_reserve];

  SELECT t.layout, t.state INTO g_layout, g_state
    FROM sluice_buckets_groups t WHERE t.grp = p_group AND t.key = '' FOR UPDATE;
  have_g := FOUND;
  SELECT t.layout, t.state INTO k_layout, k_state
    FROM sluice_buckets_groups t WHERE t.grp = p_group AND t.key = p_key FOR UPDATE;
  have_k := FOUND;
  -- The clock is read once the rows are locked: decisions of one group commit in clock order.
  now := COALESCE(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);

  -- the state: the key's slots, then the parent's; a row of another layout starts empty
  s := array_fill(0::bigint, ARRAY[total]);
  FOR i IN 1..n LOOP
    s[o[i] + c_bucket_empty_at] := c_script_none;
  END LOOP;
  IF have_k AND k_layout = left(p_layout, n - 1) AND cardinality(k_state) = ks THEN
    s[1:ks] := k_state;
  END IF;
  IF have_g AND g_layout = right(p_layout, 1) AND cardinality(g_state) = ns[n] THEN
    s[o[n]:total] := g_state;
  END IF;
  nx := s;

  -- BucketRules.backlog, by the one bucket rule
  FOR i IN 1..n LOOP
    bk[i] := sluice_v6_backlog(s[o[i] + c_bucket_empty_at],
      CASE WHEN sc[i] = 1 THEN 0 ELSE s[o[i] + c_bucket_remainder] END, sc[i], now);
  END LOOP;

  -- the paths (GroupLimits.decide), each bucket admitting by the one rule
  FOR i IN 2..n - 1 LOOP
    ceilings := ceilings AND sluice_v6_admits(bk[i], q[i], cap[i]);
  END LOOP;
  assured := sluice_v6_admits(bk[1], q[1], cap[1]) AND ceilings
    AND sluice_v6_admits(bk[n], q[n], cap[n]);
  borrowed := NOT assured AND ceilings AND sluice_v6_admits(bk[n], q[n], cap[n] - reserve);
  IF p_op <> c_try_acquire OR NOT (assured OR borrowed) THEN
    RETURN array_prepend(now, s);   -- a check or a rejection changes nothing
  END IF;

  -- BucketRules.charge and hold: E = now + the steps in ticks rounded up, R = what that added
  first := CASE WHEN assured THEN 1 ELSE 2 END;
  FOR i IN first..n LOOP
    st := sluice_v1_add(bk[i], q[i]);
    t := sluice_v6_ticks_up(st, sc[i]);
    nx[o[i] + c_bucket_empty_at] := sluice_v1_add(now, t);
    IF sc[i] <> 1 THEN
      nx[o[i] + c_bucket_remainder] := t * sc[i] - st;
    END IF;
  END LOOP;

  -- the key's row (BucketRules.resetAfter: idle once every bucket is empty)
  IF nx[1:ks] IS DISTINCT FROM s[1:ks] THEN
    idle := 0;
    FOR i IN 1..n - 1 LOOP
      idle := GREATEST(idle, sluice_v1_until(nx[o[i] + c_bucket_empty_at], now));
    END LOOP;
    IF idle <= 0 THEN
      DELETE FROM sluice_buckets_groups WHERE grp = p_group AND key = p_key;
    ELSIF have_k THEN
      UPDATE sluice_buckets_groups
         SET layout = left(p_layout, n - 1), state = nx[1:ks],
             expires_at = to_timestamp(((now + idle) / 1000000 + 1)::float8)
       WHERE grp = p_group AND key = p_key;
    ELSE
      INSERT INTO sluice_buckets_groups (grp, key, layout, state, expires_at)
      VALUES (p_group, p_key, left(p_layout, n - 1), nx[1:ks],
              to_timestamp(((now + idle) / 1000000 + 1)::float8))
      ON CONFLICT (grp, key) DO NOTHING;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'sluice: key % of group % was created under this decision', p_key, p_group
          USING ERRCODE = '40001';
      END IF;
    END IF;
  END IF;

  -- the parent's row
  IF nx[o[n]:total] IS DISTINCT FROM s[o[n]:total] THEN
    idle := sluice_v1_until(nx[o[n] + c_bucket_empty_at], now);
    IF idle <= 0 THEN
      DELETE FROM sluice_buckets_groups WHERE grp = p_group AND key = '';
    ELSIF have_g THEN
      UPDATE sluice_buckets_groups
         SET layout = right(p_layout, 1), state = nx[o[n]:total],
             expires_at = to_timestamp(((now + idle) / 1000000 + 1)::float8)
       WHERE grp = p_group AND key = '';
    ELSE
      INSERT INTO sluice_buckets_groups (grp, key, layout, state, expires_at)
      VALUES (p_group, '', right(p_layout, 1), nx[o[n]:total],
              to_timestamp(((now + idle) / 1000000 + 1)::float8))
      ON CONFLICT (grp, key) DO NOTHING;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'sluice: group % was created under this decision', p_group
          USING ERRCODE = '40001';
      END IF;
    END IF;
  END IF;
  RETURN array_prepend(now, s);
END
$fn$;

-- from V9
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

-- from V9
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

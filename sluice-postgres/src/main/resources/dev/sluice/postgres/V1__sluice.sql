-- Sluice PostgreSQL schema, version 1.
--
-- Usable as is from Flyway or Liquibase (the default table name is sluice_buckets), or applied
-- by PostgresStore.builder(dataSource).createIfMissing(true). PostgresStore.schemaSql(table,
-- unlogged) gives this text for another table name or an UNLOGGED table.
--
-- One row per limited key. state holds the limits' slots as integers (bigint[]), in microseconds
-- of the database clock, or micro-units of cost for window counts: bucket [E] (the instant the
-- bucket is empty), fixed window [start, count, blockedUntil], sliding window [start, previous,
-- current, blockedUntil]; -2^53 means "none". layout names the limits' kinds ("b", "f", "s"), so
-- a key stored under other limits restarts from empty. expires_at is when the row holds nothing
-- any more (rounded up to the next second): pruning deletes rows past it.

CREATE TABLE IF NOT EXISTS sluice_buckets (
  key        text        PRIMARY KEY,
  layout     text        NOT NULL,
  state      bigint[]    NOT NULL,
  expires_at timestamptz NOT NULL
) WITH (fillfactor = 80);

CREATE INDEX IF NOT EXISTS sluice_buckets_expires_at ON sluice_buckets (expires_at);

COMMENT ON TABLE sluice_buckets IS 'sluice schema 1';

-- Pure helpers, shared by every Sluice table of this version.
CREATE OR REPLACE FUNCTION sluice_v1_add(a bigint, b bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT LEAST(a + b, 9007199254740991)';

CREATE OR REPLACE FUNCTION sluice_v1_pdiff(a bigint, b bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT GREATEST(a - b, 0)';

-- Time from now until t; 0 when t is "none" or past.
CREATE OR REPLACE FUNCTION sluice_v1_until(t bigint, now bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS 'SELECT CASE WHEN t = -9007199254740992 THEN 0 ELSE GREATEST(t - now, 0) END';

-- The start of the window of length w that contains now.
CREATE OR REPLACE FUNCTION sluice_v1_aligned(now bigint, w bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT now - (((now % w) + w) % w)';

-- A fixed window's count at now.
CREATE OR REPLACE FUNCTION sluice_v1_fixed_count(st bigint, cnt bigint, now bigint, w bigint)
  RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS 'SELECT CASE WHEN st = -9007199254740992 OR now >= sluice_v1_add(st, w) THEN 0 ELSE cnt END';

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

-- One decision, atomically, on the database clock: a port of core's Engine (docs/semantics.md).
-- It locks the key's row (if any) for the few microseconds of the computation, writes only when
-- the state changes, deletes the row when it becomes empty, and returns {now, state before}:
-- core rebuilds the decision and its figures from that.
--   p_op      0 tryAcquire, 1 check, 2 fillUp, 3 reserve
--   p_now     microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
--   p_layout  the limits' kinds, e.g. 'bs'
--   p_args    per limit: kind, capacity, window, penalty, quantum
--   p_lock_ms lock_timeout for this decision, 0 for none
CREATE OR REPLACE FUNCTION sluice_buckets_decide(p_key text, p_op int, p_now bigint,
    p_layout text, p_args bigint[], p_lock_ms int) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  c_none CONSTANT bigint := -9007199254740992;
  n int := length(p_layout);
  kind int[]; cap bigint[]; w bigint[]; pen bigint[]; q bigint[]; o int[]; ns int[];
  total int := 0;
  s bigint[]; nx bigint[]; r bigint[];
  stored_layout text; stored bigint[];
  have_row boolean;
  now bigint; departure bigint;
  ok boolean[]; all_ok boolean; want_pen boolean;
  i int; a int; b int;
  bl bigint; filled bigint; cnt bigint; est float8; reached boolean;
  idle bigint; part bigint; stop bigint;
  attempt int := 0;
BEGIN
  IF p_lock_ms > 0 THEN
    PERFORM set_config('lock_timeout', p_lock_ms::text, true);
  END IF;

  -- The common case, one bucket (leaky, token or GCRA) without a penalty, asked to admit or
  -- to check: the same decision as the general path below, with a fraction of its work.
  IF p_layout = 'b' AND p_op <= 1 AND p_args[4] = 0 THEN
    LOOP
      attempt := attempt + 1;
      SELECT t.layout, t.state INTO stored_layout, stored
        FROM sluice_buckets t WHERE t.key = p_key FOR UPDATE;
      have_row := FOUND;
      now := COALESCE(p_now, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
      IF have_row AND stored_layout = 'b' AND cardinality(stored) = 1 THEN
        departure := stored[1];
      ELSE
        departure := c_none;
      END IF;
      IF p_op = 1 THEN
        RETURN ARRAY[now, departure];
      END IF;
      bl := sluice_v1_until(departure, now);
      IF sluice_v1_add(bl, p_args[5]) > p_args[2] THEN
        RETURN ARRAY[now, departure];   -- rejected: nothing changes
      END IF;
      stop := sluice_v1_add(sluice_v1_add(now, bl), p_args[5]);
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
    a := (i - 1) * 5;
    kind[i] := p_args[a + 1]; cap[i] := p_args[a + 2]; w[i] := p_args[a + 3];
    pen[i] := p_args[a + 4]; q[i] := p_args[a + 5];
    ns[i] := CASE kind[i] WHEN 0 THEN 1 WHEN 1 THEN 3 ELSE 4 END;
    o[i] := total + 1;
    total := total + ns[i];
  END LOOP;

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
      FOR i IN 1..n LOOP
        s[o[i]] := c_none;
        IF kind[i] <> 0 THEN
          s[o[i] + ns[i] - 1] := c_none;
        END IF;
      END LOOP;
    END IF;
    nx := s;

    departure := now;
    IF p_op = 3 THEN
      FOR i IN 1..n LOOP
        departure := GREATEST(departure, sluice_v1_add(now, sluice_v1_until(s[o[i]], now)));
      END LOOP;
    END IF;
    all_ok := true;
    FOR i IN 1..n LOOP
      IF p_op = 3 THEN
        ok[i] := sluice_v1_add(departure - now, q[i]) <= cap[i];
      ELSIF kind[i] = 0 THEN
        ok[i] := sluice_v1_add(sluice_v1_until(s[o[i]], now), q[i]) <= cap[i];
      ELSIF kind[i] = 1 THEN
        ok[i] := sluice_v1_until(s[o[i] + 2], now) = 0
          AND sluice_v1_fixed_count(s[o[i]], s[o[i] + 1], now, w[i]) + q[i] <= cap[i];
      ELSE
        ok[i] := sluice_v1_until(s[o[i] + 3], now) = 0
          AND sluice_v1_sliding(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i], q[i]) <= cap[i]::float8;
      END IF;
      all_ok := all_ok AND ok[i];
    END LOOP;

    FOR i IN 1..n LOOP
      want_pen := false;
      IF p_op = 2 THEN
        -- fillUp: add what fits, clamp at capacity
        IF kind[i] = 0 THEN
          bl := sluice_v1_until(s[o[i]], now);
          filled := sluice_v1_add(bl, q[i]);
          reached := filled >= cap[i];
          nx[o[i]] := sluice_v1_add(now, GREATEST(bl, LEAST(cap[i], filled)));
        ELSIF kind[i] = 1 THEN
          cnt := sluice_v1_fixed_count(s[o[i]], s[o[i] + 1], now, w[i]);
          reached := cnt + q[i] >= cap[i];
          IF s[o[i]] = c_none OR now >= sluice_v1_add(s[o[i]], w[i]) THEN
            nx[o[i]] := now;
          END IF;
          nx[o[i] + 1] := GREATEST(cnt, LEAST(cap[i], cnt + q[i]));
        ELSE
          est := sluice_v1_sliding(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i], q[i]);
          reached := (NOT (est <= cap[i]::float8)) OR est >= cap[i]::float8;
          r := sluice_v1_roll(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i]);
          nx[o[i]] := r[1];
          nx[o[i] + 1] := r[2];
          nx[o[i] + 2] := GREATEST(r[3], LEAST(cap[i], r[3] + q[i]));
        END IF;
        want_pen := reached AND q[i] <= cap[i];
      ELSIF p_op <> 1 THEN
        IF all_ok THEN
          IF kind[i] = 0 THEN
            nx[o[i]] := sluice_v1_add(GREATEST(CASE WHEN p_op = 3 THEN departure ELSE now END,
                sluice_v1_add(now, sluice_v1_until(s[o[i]], now))), q[i]);
          ELSIF kind[i] = 1 THEN
            IF s[o[i]] = c_none OR now >= sluice_v1_add(s[o[i]], w[i]) THEN
              nx[o[i]] := now;
              nx[o[i] + 1] := q[i];
            ELSE
              nx[o[i] + 1] := s[o[i] + 1] + q[i];
            END IF;
          ELSE
            r := sluice_v1_roll(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i]);
            nx[o[i]] := r[1];
            nx[o[i] + 1] := r[2];
            nx[o[i] + 2] := r[3] + q[i];
          END IF;
        ELSE
          want_pen := (NOT ok[i]) AND q[i] <= cap[i];
        END IF;
      END IF;
      -- a penalty starts only when none is in force
      IF want_pen AND pen[i] > 0 THEN
        IF kind[i] = 0 THEN
          IF sluice_v1_until(s[o[i]], now) <= cap[i] THEN
            nx[o[i]] := sluice_v1_add(now, sluice_v1_add(cap[i], pen[i]));
          END IF;
        ELSE
          b := o[i] + ns[i] - 1;
          IF sluice_v1_until(s[b], now) = 0 THEN
            nx[b] := sluice_v1_add(now, pen[i]);
          END IF;
        END IF;
      END IF;
    END LOOP;

    IF nx IS DISTINCT FROM s THEN
      -- how long until the new state holds nothing
      idle := 0;
      FOR i IN 1..n LOOP
        IF kind[i] = 0 THEN
          part := sluice_v1_until(nx[o[i]], now);
        ELSIF kind[i] = 1 THEN
          part := sluice_v1_until(nx[o[i] + 2], now);
          IF sluice_v1_fixed_count(nx[o[i]], nx[o[i] + 1], now, w[i]) > 0 THEN
            part := GREATEST(part, sluice_v1_pdiff(sluice_v1_add(nx[o[i]], w[i]), now));
          END IF;
        ELSE
          r := sluice_v1_roll(nx[o[i]], nx[o[i] + 1], nx[o[i] + 2], now, w[i]);
          stop := now;
          IF r[3] > 0 THEN
            stop := sluice_v1_add(r[1], 2 * w[i]);
          ELSIF r[2] > 0 THEN
            stop := sluice_v1_add(r[1], w[i]);
          END IF;
          part := GREATEST(sluice_v1_until(nx[o[i] + 3], now), sluice_v1_pdiff(stop, now));
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

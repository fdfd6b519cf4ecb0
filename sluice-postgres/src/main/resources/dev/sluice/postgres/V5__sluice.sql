-- Sluice PostgreSQL schema, version 5: reserve counts its own queue exactly.
--
-- Applied after V1__sluice.sql to V4__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). The table is unchanged; the
-- decide function is replaced. A reserve departs once every limit's queue is empty: version 2
-- rounded each queue's end up to a whole microsecond before adding the request, so at a rate
-- whose unit is not a whole number of microseconds (3/s) two reservations that fill the bucket
-- exactly were refused. Now a limit's own queue counts in its steps, exactly as core's
-- Engine.decide and decide.lua count it.

-- One decision, atomically, on the database clock: a port of core's Engine (docs/semantics.md).
-- It locks the key's row (if any) for the few microseconds of the computation, writes only when
-- the state changes, deletes the row when it becomes empty, and returns {now, state before}:
-- core rebuilds the decision and its figures from that.
--   p_op      0 tryAcquire, 1 check, 2 fillUp, 3 reserve
--   p_now     microseconds since the epoch, or NULL for clock_timestamp() (a test hook)
--   p_layout  the limits' layout letters, e.g. 'bs' ('r': a bucket counted in steps of 1/scale
--             of a tick, with state [E, R])
--   p_args    per limit: kind, capacity, window, penalty, quantum, scale (StoreProtocol); then
--             the count of grains a lease asks for or a release gives back (1 otherwise)
--   p_lock_ms lock_timeout for this decision, 0 for none
CREATE OR REPLACE FUNCTION sluice_buckets_decide(p_key text, p_op int, p_now bigint,
    p_layout text, p_args bigint[], p_lock_ms int) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  c_none CONSTANT bigint := -9007199254740992;
  n int := length(p_layout);
  c_big CONSTANT bigint := 4503599627370496;
  c_args CONSTANT int := 6;
  c_try_acquire CONSTANT int := 0;
  c_check CONSTANT int := 1;
  c_fill_up CONSTANT int := 2;
  c_reserve CONSTANT int := 3;
  c_lease CONSTANT int := 4;
  c_release CONSTANT int := 5;
  c_bucket CONSTANT int := 0;
  c_fixed_window CONSTANT int := 1;
  c_sliding_window CONSTANT int := 2;
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
  -- admit or to check: the same decision as the general path below, with a fraction of its work.
  IF p_layout = 'b' AND p_op <= c_check AND p_args[4] = 0 THEN
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
      IF p_op = c_check THEN
        RETURN ARRAY[now, departure];
      END IF;
      bl := sluice_v1_until(departure, now);
      IF bl > c_big THEN
        bl := c_big;
      END IF;
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
    a := (i - 1) * c_args;
    kind[i] := p_args[a + 1]; cap[i] := p_args[a + 2]; w[i] := p_args[a + 3];
    pen[i] := p_args[a + 4]; q[i] := p_args[a + 5]; sc[i] := p_args[a + 6];
    ns[i] := CASE kind[i] WHEN c_bucket THEN CASE WHEN sc[i] = 1 THEN 1 ELSE 2 END WHEN c_fixed_window THEN 3 ELSE 4 END;
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
        IF kind[i] <> c_bucket THEN
          s[o[i] + ns[i] - 1] := c_none;
        END IF;
      END LOOP;
    END IF;
    nx := s;

    -- The general path: core's Engine.decide, step by step (fits; then fill, charge or
    -- penalize; then reset_after), and within each step one section per kind in the order of
    -- core's rules classes and of decide.lua's sections: bucket (BucketRules), fixed window
    -- (FixedWindowRules), sliding window (SlidingWindowRules).

    -- BucketRules.backlog: sc * (E - now) - R steps while E > now, at most c_big
    FOR i IN 1..n LOOP
      IF kind[i] = c_bucket THEN
        d := sluice_v1_until(s[o[i]], now);
        IF d > c_big / sc[i] THEN
          bk[i] := c_big;
        ELSIF sc[i] = 1 OR d = 0 THEN
          bk[i] := d;
        ELSE
          bk[i] := d * sc[i] - LEAST(s[o[i] + 1], sc[i] - 1);
        END IF;
      END IF;
    END LOOP;

    IF p_op = c_lease OR p_op = c_release THEN
      -- leases (Engine.lease): buckets only; as many grains of q as every limit holds room
      -- for, charged as admissions are; a release gives grains back, never below empty, and
      -- leaves a penalty's hold alone
      want := p_args[c_args * n + 1];
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
            t := (st + sc[i] - 1) / sc[i];
            nx[o[i]] := sluice_v1_add(now, t);
            IF sc[i] <> 1 THEN
              nx[o[i] + 1] := t * sc[i] - st;
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
              d := (bk[a] + sc[a] - 1) / sc[a];
              d := CASE WHEN d > c_big / sc[i] THEN c_big ELSE d * sc[i] END;
            END IF;
            qt[i] := GREATEST(qt[i], d);
          END LOOP;
        END LOOP;
      END IF;
      -- fits (Rules.fits; reserve: Engine.queues) ---------------------------------------------------
      all_ok := true;
      FOR i IN 1..n LOOP
        IF kind[i] = c_bucket THEN
          IF p_op = c_reserve THEN
            ok[i] := sluice_v1_add(qt[i], q[i]) <= cap[i];
          ELSE
            ok[i] := sluice_v1_add(bk[i], q[i]) <= cap[i];
          END IF;
        ELSIF kind[i] = c_fixed_window THEN
          ok[i] := sluice_v1_until(s[o[i] + 2], now) = 0
            AND sluice_v1_fixed_count(s[o[i]], s[o[i] + 1], now, w[i]) + q[i] <= cap[i];
        ELSE
          ok[i] := sluice_v1_until(s[o[i] + 3], now) = 0
            AND sluice_v1_sliding(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i], q[i]) <= cap[i]::float8;
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
            t := (st + sc[i] - 1) / sc[i];
            nx[o[i]] := sluice_v1_add(now, t);
            IF sc[i] <> 1 THEN
              nx[o[i] + 1] := t * sc[i] - st;
            END IF;
          END IF;
        ELSIF kind[i] = c_fixed_window THEN
          IF p_op = c_fill_up THEN
            cnt := sluice_v1_fixed_count(s[o[i]], s[o[i] + 1], now, w[i]);
            IF s[o[i]] = c_none OR now >= sluice_v1_add(s[o[i]], w[i]) THEN
              nx[o[i]] := now;
            END IF;
            nx[o[i] + 1] := GREATEST(cnt, LEAST(cap[i], cnt + q[i]));
            want_pen := cnt + q[i] >= cap[i] AND q[i] <= cap[i];
          ELSIF p_op <> c_check AND all_ok THEN
            IF s[o[i]] = c_none OR now >= sluice_v1_add(s[o[i]], w[i]) THEN
              nx[o[i]] := now;
              nx[o[i] + 1] := q[i];
            ELSE
              nx[o[i] + 1] := s[o[i] + 1] + q[i];
            END IF;
          ELSIF p_op <> c_check THEN
            want_pen := (NOT ok[i]) AND q[i] <= cap[i];
          END IF;
          IF want_pen AND pen[i] > 0 AND sluice_v1_until(s[o[i] + 2], now) = 0 THEN
            nx[o[i] + 2] := sluice_v1_add(now, pen[i]);
          END IF;
        ELSE
          IF p_op = c_fill_up THEN
            est := sluice_v1_sliding(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i], q[i]);
            r := sluice_v1_roll(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i]);
            nx[o[i]] := r[1];
            nx[o[i] + 1] := r[2];
            nx[o[i] + 2] := GREATEST(r[3], LEAST(cap[i], r[3] + q[i]));
            want_pen := ((NOT (est <= cap[i]::float8)) OR est >= cap[i]::float8) AND q[i] <= cap[i];
          ELSIF p_op <> c_check AND all_ok THEN
            r := sluice_v1_roll(s[o[i]], s[o[i] + 1], s[o[i] + 2], now, w[i]);
            nx[o[i]] := r[1];
            nx[o[i] + 1] := r[2];
            nx[o[i] + 2] := r[3] + q[i];
          ELSIF p_op <> c_check THEN
            want_pen := (NOT ok[i]) AND q[i] <= cap[i];
          END IF;
          IF want_pen AND pen[i] > 0 AND sluice_v1_until(s[o[i] + 3], now) = 0 THEN
            nx[o[i] + 3] := sluice_v1_add(now, pen[i]);
          END IF;
        END IF;
      END LOOP;
    END IF;

    IF nx IS DISTINCT FROM s THEN
      -- reset_after (Rules.resetAfter): how long until the new state holds nothing ----------
      idle := 0;
      FOR i IN 1..n LOOP
        IF kind[i] = c_bucket THEN
          part := sluice_v1_until(nx[o[i]], now);
        ELSIF kind[i] = c_fixed_window THEN
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

COMMENT ON TABLE sluice_buckets IS 'sluice schema 5';

-- Sluice PostgreSQL schema, version 4: groups, hierarchical limits with borrowing
-- (docs/semantics.md, "Groups").
--
-- Applied after V1__ to V3__sluice.sql (Flyway and Liquibase run them in order;
-- createIfMissing(true) and PostgresStore.schemaSql run them all). The buckets table and its
-- function are unchanged. A group's state lives in its own table: the parent under key '' (no
-- limited key is empty) and each key's assured and ceiling buckets under (group, key), so that a
-- group's state is never a plain key's.

CREATE TABLE IF NOT EXISTS sluice_buckets_groups (
  grp        text        NOT NULL,
  key        text        NOT NULL,
  layout     text        NOT NULL,
  state      bigint[]    NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (grp, key)
);
CREATE INDEX IF NOT EXISTS sluice_buckets_groups_expires_at
  ON sluice_buckets_groups (expires_at);

-- One group's decision, atomically, on the database clock: a port of core's GroupLimits.decide.
-- It locks the group's parent row, then the key's (always in that order, so decisions never
-- deadlock), writes each that changed, deletes a row whose buckets are empty, and returns
-- {now, the key's slots, the parent's slots} as they were before: core rebuilds the decision.
--   p_op      0 tryAcquire, 1 check (no other operation applies to a group)
--   p_layout  the limits' layout letters: the assured limit, the ceilings, last the parent
--             (all buckets: 'b', or 'r' for a scale above 1, state [E, R])
--   p_args    per limit: kind, capacity, window, penalty, quantum, scale (StoreProtocol); then
--             the count (1); then the reserve, the parent's steps only assured traffic may fill
-- A first decision that races another to create a row raises a serialization failure (40001),
-- rolling back everything; the store decides again.
CREATE OR REPLACE FUNCTION sluice_buckets_decide_group(p_group text, p_key text, p_op int,
    p_now bigint, p_layout text, p_args bigint[], p_lock_ms int) RETURNS bigint[]
  LANGUAGE plpgsql AS $fn$
DECLARE
  c_none CONSTANT bigint := -9007199254740992;
  c_big CONSTANT bigint := 4503599627370496;
  c_args CONSTANT int := 6;
  c_try_acquire CONSTANT int := 0;
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
    a := (i - 1) * c_args;
    cap[i] := p_args[a + 2]; q[i] := p_args[a + 5]; sc[i] := p_args[a + 6];
    ns[i] := CASE WHEN sc[i] = 1 THEN 1 ELSE 2 END;
    o[i] := total + 1;
    total := total + ns[i];
  END LOOP;
  ks := o[n] - 1;
  reserve := p_args[c_args * n + 2];

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
    s[o[i]] := c_none;
  END LOOP;
  IF have_k AND k_layout = left(p_layout, n - 1) AND cardinality(k_state) = ks THEN
    s[1:ks] := k_state;
  END IF;
  IF have_g AND g_layout = right(p_layout, 1) AND cardinality(g_state) = ns[n] THEN
    s[o[n]:total] := g_state;
  END IF;
  nx := s;

  -- BucketRules.backlog: sc * (E - now) - R steps while E > now, at most c_big
  FOR i IN 1..n LOOP
    d := sluice_v1_until(s[o[i]], now);
    IF d > c_big / sc[i] THEN
      bk[i] := c_big;
    ELSIF sc[i] = 1 OR d = 0 THEN
      bk[i] := d;
    ELSE
      bk[i] := d * sc[i] - LEAST(s[o[i] + 1], sc[i] - 1);
    END IF;
  END LOOP;

  -- the paths (GroupLimits.decide)
  FOR i IN 2..n - 1 LOOP
    ceilings := ceilings AND sluice_v1_add(bk[i], q[i]) <= cap[i];
  END LOOP;
  assured := sluice_v1_add(bk[1], q[1]) <= cap[1] AND ceilings
    AND sluice_v1_add(bk[n], q[n]) <= cap[n];
  borrowed := NOT assured AND ceilings AND sluice_v1_add(bk[n], q[n]) <= cap[n] - reserve;
  IF p_op <> c_try_acquire OR NOT (assured OR borrowed) THEN
    RETURN array_prepend(now, s);   -- a check or a rejection changes nothing
  END IF;

  -- BucketRules.charge and hold: E = now + the steps in ticks rounded up, R = what that added
  first := CASE WHEN assured THEN 1 ELSE 2 END;
  FOR i IN first..n LOOP
    st := sluice_v1_add(bk[i], q[i]);
    t := (st + sc[i] - 1) / sc[i];
    nx[o[i]] := sluice_v1_add(now, t);
    IF sc[i] <> 1 THEN
      nx[o[i] + 1] := t * sc[i] - st;
    END IF;
  END LOOP;

  -- the key's row (BucketRules.resetAfter: idle once every bucket is empty)
  IF nx[1:ks] IS DISTINCT FROM s[1:ks] THEN
    idle := 0;
    FOR i IN 1..n - 1 LOOP
      idle := GREATEST(idle, sluice_v1_until(nx[o[i]], now));
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
    idle := sluice_v1_until(nx[o[n]], now);
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

COMMENT ON TABLE sluice_buckets IS 'sluice schema 4';

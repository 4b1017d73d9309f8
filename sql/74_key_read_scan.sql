-- Reads by key of views that append as one custom scan node,
-- StreamExtKeyRead (src/query/key_read.c, docs/continuous-views.md): a read
-- fixing every key by equality to a constant or a parameter probes the
-- materialization's and the delta's key indexes and merges the group in C.
-- The oracle: every read equals the same read with stream_ext.key_read_scan
-- = off (the merged read's plan) and the query over the stream's rows as
-- plain SQL -- for every aggregate kind (count(DISTINCT) deferred to
-- compaction, a user aggregate), NULL keys and values, groups only in the
-- delta, only in the materialization or in both, an empty delta, several
-- keys, wide (text) keys, a tumbling window, HAVING, two views sharing one
-- storage, prepared generic plans, a rescanned subquery and a rolled-back
-- batch.  Privileges are the view's and, as its owner, its tables' as
-- before.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;
SET stream_ext.share_storage = off;

-- does the plan of q read through the node
CREATE FUNCTION r74_node(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  line text;
  found boolean := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    found := found OR line LIKE '%Custom Scan (StreamExtKeyRead)%';
  END LOOP;
  RETURN found;
END $$;

-- the rows of q (a query or an EXECUTE), as text, in order
CREATE FUNCTION r74_rows(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  rows text[] := '{}';
BEGIN
  FOR r IN EXECUTE q LOOP
    rows := rows || r::text;
  END LOOP;
  RETURN array_to_string(ARRAY(SELECT x FROM unnest(rows) x ORDER BY x), ';');
END $$;

-- for each key condition of conds (%s: the view or the oracle), the view's
-- reads with the node on and off and the oracle's: how many reads, how many
-- went through the node, how many differed from the node off, from the
-- oracle
CREATE FUNCTION r74_check(v text, oracle text, conds text[],
                          OUT reads int, OUT by_node int, OUT diff_off int, OUT diff_oracle int)
LANGUAGE plpgsql AS $$
DECLARE
  c text;
  q text;
  r_on text;
  r_off text;
  r_or text;
BEGIN
  reads := 0; by_node := 0; diff_off := 0; diff_oracle := 0;
  FOREACH c IN ARRAY conds LOOP
    q := format('SELECT * FROM %s WHERE %s', v, c);
    PERFORM set_config('stream_ext.key_read_scan', 'on', true);
    IF r74_node(q) THEN by_node := by_node + 1; END IF;
    r_on := r74_rows(q);
    PERFORM set_config('stream_ext.key_read_scan', 'off', true);
    r_off := r74_rows(q);
    PERFORM set_config('stream_ext.key_read_scan', 'on', true);
    r_or := r74_rows(format('SELECT * FROM (%s) o WHERE %s', oracle, c));
    reads := reads + 1;
    IF r_on IS DISTINCT FROM r_off THEN
      diff_off := diff_off + 1;
      RAISE NOTICE 'off differs for %: % / %', c, r_on, r_off;
    END IF;
    IF r_on IS DISTINCT FROM r_or THEN
      diff_oracle := diff_oracle + 1;
      RAISE NOTICE 'oracle differs for %: % / %', c, r_on, r_or;
    END IF;
  END LOOP;
END $$;

CREATE AGGREGATE r74_isum(int) (SFUNC = int4pl, STYPE = int, COMBINEFUNC = int4pl, INITCOND = '0');

SELECT stream_ext.create_stream('r74', 'k int, c int, t text, v int, b bigint, x numeric, ts timestamptz');
CREATE TABLE r74_log (k int, c int, t text, v int, b bigint, x numeric, ts timestamptz);

-- every kind of aggregate state: plain (count, sum(int), min, max, a user
-- aggregate), internal ones stored serialized (sum(bigint), avg(numeric),
-- sum(numeric)), arrays (avg(int)), text with a collation
CREATE VIEW r74_k WITH (continuous) AS
  SELECT k, count(*) AS n, count(v) AS nv, sum(v) AS s, sum(b) AS sb, sum(x) AS sx,
         avg(v) AS a, avg(x) AS ax, min(v) AS lo, max(t) AS hi, r74_isum(v) AS u
    FROM r74 GROUP BY k;
CREATE VIEW r74_kc WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS hi FROM r74 GROUP BY k, c;
CREATE VIEW r74_t WITH (continuous) AS
  SELECT t, count(*) AS n, min(t) AS lo FROM r74 GROUP BY t;
CREATE VIEW r74_w WITH (continuous) AS
  SELECT k, stream_ext.tumble(ts, '1 hour') AS hour, count(*) AS n, sum(v) AS s
    FROM r74 GROUP BY k, hour;
-- HAVING: the view's filter on the merged row
CREATE VIEW r74_h WITH (continuous) AS
  SELECT k, count(*) AS n FROM r74 GROUP BY k HAVING count(*) > 30;
-- count(DISTINCT), deferred to compaction: the side table's count plus the
-- values of the delta's arrays it lacks (two of them, and states of an
-- internal type merged with the rows counting those values)
CREATE VIEW r74_d WITH (continuous) AS
  SELECT k, count(DISTINCT v % 7) AS dv, count(DISTINCT b % 97) AS db, count(*) AS n, sum(x) AS sx
    FROM r74 GROUP BY k;

-- a view of its own storage, that a second one shares below
SET stream_ext.share_storage = on;
CREATE VIEW r74_s1 WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM r74 GROUP BY k;
SET stream_ext.share_storage = off;

CREATE VIEW r74_k_oracle AS
  SELECT k, count(*) AS n, count(v) AS nv, sum(v) AS s, sum(b) AS sb, sum(x) AS sx,
         avg(v) AS a, avg(x) AS ax, min(v) AS lo, max(t) AS hi, r74_isum(v) AS u
    FROM r74_log GROUP BY k;
CREATE VIEW r74_kc_oracle AS SELECT k, c, count(*) AS n, sum(v) AS s, max(v) AS hi FROM r74_log GROUP BY k, c;
CREATE VIEW r74_t_oracle AS SELECT t, count(*) AS n, min(t) AS lo FROM r74_log GROUP BY t;
CREATE VIEW r74_w_oracle AS
  SELECT k, stream_ext.tumble(ts, '1 hour') AS hour, count(*) AS n, sum(v) AS s
    FROM r74_log GROUP BY k, 2;
CREATE VIEW r74_s1_oracle AS SELECT k, count(*) AS n, sum(v) AS s FROM r74_log GROUP BY k;
-- r74_s2 counts the rows from 2001 on (made then, backfill = 'none')
CREATE VIEW r74_s2_oracle AS
  SELECT k, max(v) AS hi, avg(x) AS ax FROM r74_log WHERE b > 2000::bigint * 1000000007 GROUP BY k;
CREATE VIEW r74_h_oracle AS SELECT k, count(*) AS n FROM r74_log GROUP BY k HAVING count(*) > 30;
CREATE VIEW r74_d_oracle AS
  SELECT k, count(DISTINCT v % 7) AS dv, count(DISTINCT b % 97) AS db, count(*) AS n, sum(x) AS sx
    FROM r74_log GROUP BY k;

-- keys 0..59 (7 NULL), values NULL every 13th row; lo..hi
CREATE FUNCTION r74_feed(lo int, hi int, keys int DEFAULT 60) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT nullif(i % keys, 7) AS k, nullif(i % 3, 2) AS c,
                    CASE WHEN i % 11 = 0 THEN NULL ELSE 't' || (i % 40) END AS t,
                    CASE WHEN i % 13 = 0 THEN NULL ELSE i END AS v,
                    i::bigint * 1000000007 AS b, i / 7.0 AS x,
                    timestamptz '2026-01-01 00:00:00+00' + (i % 5) * interval '50 minutes' AS ts
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r74 SELECT * FROM r)
  INSERT INTO r74_log SELECT * FROM r;
$$;

CREATE FUNCTION r74_all(OUT v text, OUT reads int, OUT by_node int, OUT diff_off int, OUT diff_oracle int)
RETURNS SETOF record LANGUAGE sql AS $$
  SELECT 'r74_k', * FROM r74_check('r74_k', 'SELECT * FROM r74_k_oracle',
    ARRAY(SELECT 'k = ' || i FROM generate_series(0, 70) i) || ARRAY['k = NULL', 'k = 3 AND s > 0', 'k = 3 AND a < 0'])
  UNION ALL
  SELECT 'r74_kc', * FROM r74_check('r74_kc', 'SELECT * FROM r74_kc_oracle',
    ARRAY(SELECT format('k = %s AND c = %s', i, j) FROM generate_series(0, 61, 3) i, generate_series(0, 2) j))
  UNION ALL
  SELECT 'r74_t', * FROM r74_check('r74_t', 'SELECT * FROM r74_t_oracle',
    ARRAY(SELECT format('t = %L', 't' || i) FROM generate_series(0, 45) i) || ARRAY['t = ''x''', 't = NULL'])
  UNION ALL
  SELECT 'r74_w', * FROM r74_check('r74_w', 'SELECT * FROM r74_w_oracle',
    ARRAY(SELECT format('k = %s AND hour = %L', i, timestamptz '2026-01-01 00:00:00+00' + h * interval '1 hour')
            FROM generate_series(0, 61, 4) i, generate_series(0, 4) h))
  UNION ALL
  SELECT 'r74_h', * FROM r74_check('r74_h', 'SELECT * FROM r74_h_oracle',
    ARRAY(SELECT 'k = ' || i FROM generate_series(0, 70, 5) i))
  UNION ALL
  SELECT 'r74_s1', * FROM r74_check('r74_s1', 'SELECT * FROM r74_s1_oracle',
    ARRAY(SELECT 'k = ' || i FROM generate_series(0, 70, 3) i))
  UNION ALL
  SELECT 'r74_s2', * FROM r74_check('r74_s2', 'SELECT * FROM r74_s2_oracle',
    ARRAY(SELECT 'k = ' || i FROM generate_series(0, 70) i))
  UNION ALL
  SELECT 'r74_d', * FROM r74_check('r74_d', 'SELECT * FROM r74_d_oracle',
    ARRAY(SELECT 'k = ' || i FROM generate_series(0, 70, 2) i));
$$;

-- an empty delta, then groups in the materialization only (0..59)
SELECT r74_feed(1, 2000);
-- a view sharing r74_s1's storage (its states side by side, a presence state
-- per member): no row for the groups without rows since it was made
SET stream_ext.share_storage = on;
CREATE VIEW r74_s2 WITH (continuous, backfill = 'none') AS
  SELECT k, max(v) AS hi, avg(x) AS ax FROM r74 GROUP BY k;
SET stream_ext.share_storage = off;
SELECT count(DISTINCT matrel) AS storages FROM stream_ext.view_catalog
 WHERE view IN ('r74_s1'::regclass, 'r74_s2'::regclass);
SELECT * FROM r74_all();
SELECT stream_ext.compact(v) FROM unnest(ARRAY['r74_k', 'r74_kc', 'r74_t', 'r74_w', 'r74_h', 'r74_d', 'r74_s1']) v;
SELECT count(*) FROM r74_k_delta;
SELECT * FROM r74_all();
-- groups in both, and in the delta only (60..64: a wider key range)
SELECT r74_feed(2001, 2300, 65);
ANALYZE r74_k_mrel, r74_k_delta;
SELECT * FROM r74_all();

-- the plans: the node for every key fixed, not for part of the keys, a
-- range, IS NULL, no filter
SELECT r74_node('SELECT * FROM r74_k WHERE k = 3') AS key,
       r74_node('SELECT * FROM r74_k WHERE 3 = k') AS commuted,
       r74_node('SELECT * FROM r74_kc WHERE k = 3') AS part_of_keys,
       r74_node('SELECT * FROM r74_k WHERE k > 3') AS range,
       r74_node('SELECT * FROM r74_k WHERE k IS NULL') AS is_null,
       r74_node('SELECT * FROM r74_k') AS full_read,
       r74_node('SELECT * FROM r74_d WHERE k = 3') AS count_distinct;
EXPLAIN (COSTS OFF) SELECT * FROM r74_k WHERE k = 3;
EXPLAIN (COSTS OFF) SELECT k, n FROM r74_kc WHERE k = 3 AND c = 1 AND n > 1;
SET stream_ext.key_read_scan = off;
SELECT r74_node('SELECT * FROM r74_k WHERE k = 3') AS key_with_the_setting_off;
RESET stream_ext.key_read_scan;

-- prepared statements with their generic plans (PostgREST's reads)
SET plan_cache_mode = force_generic_plan;
PREPARE r74_p(int) AS SELECT * FROM r74_k WHERE k = $1;
PREPARE r74_pkc(int, int) AS SELECT k, c, n, s, hi FROM r74_kc WHERE k = $1 AND c = $2;
EXPLAIN (COSTS OFF) EXECUTE r74_p(3);
CREATE TABLE r74_prepared (q text, k int, on_rows text, off_rows text);
DO $$
BEGIN
  FOR i IN 0..66 LOOP
    PERFORM set_config('stream_ext.key_read_scan', 'on', false);
    INSERT INTO r74_prepared SELECT 'r74_p', i, r74_rows(format('EXECUTE r74_p(%s)', i)), NULL;
    INSERT INTO r74_prepared SELECT 'r74_pkc', i, r74_rows(format('EXECUTE r74_pkc(%s, %s)', i, i % 3)), NULL;
  END LOOP;
  PERFORM set_config('stream_ext.key_read_scan', 'off', false);
  UPDATE r74_prepared SET off_rows = r74_rows(format('SELECT * FROM r74_k WHERE k = %s', k)) WHERE q = 'r74_p';
  UPDATE r74_prepared SET off_rows = r74_rows(format('SELECT k, c, n, s, hi FROM r74_kc WHERE k = %s AND c = %s', k, k % 3))
   WHERE q = 'r74_pkc';
  PERFORM set_config('stream_ext.key_read_scan', 'on', false);
END $$;
SELECT q, count(*) AS reads, count(*) FILTER (WHERE on_rows <> '') AS with_a_row,
       count(*) FILTER (WHERE on_rows IS DISTINCT FROM off_rows) AS differ
  FROM r74_prepared GROUP BY q ORDER BY q;
EXECUTE r74_p(NULL);
RESET plan_cache_mode;

-- a correlated subquery: the node rescanned with each outer value
EXPLAIN (COSTS OFF)
  SELECT i, (SELECT n FROM r74_k WHERE k = i) FROM generate_series(0, 66) i;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE n IS DISTINCT FROM (SELECT n FROM r74_k_oracle o WHERE o.k = i)) AS differ
  FROM (SELECT i, (SELECT n FROM r74_k WHERE k = i) AS n FROM generate_series(0, 66) i) s;
-- and a join on the key: planned without the node, same rows
SELECT count(*) AS rows FROM generate_series(0, 66) i JOIN r74_k ON r74_k.k = i;

-- a rolled-back batch: seen by its transaction's reads, then gone
BEGIN;
SELECT r74_feed(5001, 5010, 3);
SELECT * FROM r74_check('r74_k', 'SELECT * FROM r74_k_oracle', ARRAY['k = 0', 'k = 1', 'k = 2', 'k = 3']);
ROLLBACK;
SELECT * FROM r74_check('r74_k', 'SELECT * FROM r74_k_oracle', ARRAY['k = 0', 'k = 1', 'k = 2', 'k = 3']);

-- privileges: a role without SELECT on the view gets the same error either
-- way; with it, reads as the view's owner
CREATE ROLE r74_reader;
GRANT SELECT ON r74_k_oracle TO r74_reader;
SET ROLE r74_reader;
SET stream_ext.key_read_scan = on;
SELECT n FROM r74_k WHERE k = 3;
SET stream_ext.key_read_scan = off;
SELECT n FROM r74_k WHERE k = 3;
RESET ROLE;
GRANT SELECT ON r74_k TO r74_reader;
SET ROLE r74_reader;
SET stream_ext.key_read_scan = on;
SELECT r74_node('SELECT n FROM r74_k WHERE k = 3') AS by_node,
       (SELECT n FROM r74_k WHERE k = 3) = (SELECT n FROM r74_k_oracle WHERE k = 3) AS same;
-- the view's owner losing SELECT on its materialization: the read fails the same way
RESET ROLE;
CREATE ROLE r74_owner;
GRANT USAGE, CREATE ON SCHEMA public TO r74_owner;
GRANT SELECT ON r74 TO r74_owner;
SET ROLE r74_owner;
CREATE VIEW r74_o WITH (continuous) AS SELECT k, count(*) AS n FROM r74 GROUP BY k;
GRANT SELECT ON r74_o TO r74_reader;
RESET ROLE;
SELECT r74_feed(6001, 6100);
SET ROLE r74_reader;
SELECT r74_node('SELECT n FROM r74_o WHERE k = 3') AS by_node;
RESET ROLE;
REVOKE SELECT ON r74_o_mrel FROM r74_owner;
SET ROLE r74_reader;
SET stream_ext.key_read_scan = on;
SELECT n FROM r74_o WHERE k = 3;
SET stream_ext.key_read_scan = off;
SELECT n FROM r74_o WHERE k = 3;
RESET ROLE;
RESET stream_ext.key_read_scan;
GRANT SELECT ON r74_o_mrel TO r74_owner;
SET ROLE r74_reader;
SELECT n FROM r74_o WHERE k = 3;
RESET ROLE;

-- a generic plan read through the node is made again when an index it
-- probes goes: then without the node (the delta has no key index left)
SET plan_cache_mode = force_generic_plan;
PREPARE r74_q(int) AS SELECT k, n FROM r74_k WHERE k = $1;
SELECT r74_node('EXECUTE r74_q(3)') AS by_node;
EXECUTE r74_q(3);
DROP INDEX r74_k_delta_k_idx;
SELECT r74_node('EXECUTE r74_q(3)') AS by_node;
EXECUTE r74_q(3);
SELECT k, count(*) AS n FROM r74_log WHERE k = 3 GROUP BY k;
RESET plan_cache_mode;

DROP VIEW r74_o;
REVOKE ALL ON SCHEMA public FROM r74_owner;
REVOKE ALL ON r74 FROM r74_owner;
DROP ROLE r74_owner;
DROP VIEW r74_k, r74_kc, r74_t, r74_w, r74_h, r74_d, r74_s1, r74_s2, r74_k_oracle, r74_kc_oracle,
  r74_t_oracle, r74_w_oracle, r74_h_oracle, r74_d_oracle, r74_s1_oracle, r74_s2_oracle;
DROP OWNED BY r74_reader;
DROP ROLE r74_reader;
DROP TABLE r74_log, r74_prepared;
DROP AGGREGATE r74_isum(int);
DROP FUNCTION r74_node(text), r74_rows(text), r74_check(text, text, text[]), r74_feed(int, int, int), r74_all();

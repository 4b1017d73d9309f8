-- Unprepared reads by key (src/query/key_read.c, key_read_planner()): a
-- read the node StreamExtKeyRead takes is planned with the view's UNION
-- ALL replaced by a stub, not planned; a query it does not take entirely
-- is planned again with the UNION ALL, as before.  The DEBUG1 lines say
-- which.  The oracle: the same reads with stream_ext.key_read_scan = off
-- and the query as plain SQL over a copy of the rows -- for keys in the
-- materialization, the delta, both, neither, NULL keys, reads inside
-- joins, subqueries, CTEs and UNION ALLs; privileges as before; a view
-- replaced or dropped between reads.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;
SET stream_ext.share_storage = off;

SELECT stream_ext.create_stream('r77', 'k int, x float8');
CREATE TABLE r77_log (k int, x float8);
CREATE VIEW r77_v WITH (continuous) AS
  SELECT k, count(*) AS n, sum(x) AS s, max(x) AS hi FROM r77 GROUP BY k;
CREATE VIEW r77_oracle AS
  SELECT k, count(*) AS n, sum(x) AS s, max(x) AS hi FROM r77_log GROUP BY k;
CREATE FUNCTION r77_feed(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'INSERT INTO r77 ' || q;
  EXECUTE 'INSERT INTO r77_log ' || q;
END $$;
-- keys 0..19 and NULL compacted into the materialization, then 0..9 and
-- 30 in the delta
SELECT r77_feed('SELECT i % 20, i FROM generate_series(1, 200) i');
SELECT r77_feed('VALUES (NULL::int, 1::float8), (NULL, 2)');
SELECT stream_ext.compact('r77_v') > 0 AS compacted;
SELECT r77_feed('SELECT i % 10, 1 FROM generate_series(1, 30) i');
SELECT r77_feed('VALUES (30, 5::float8)');

-- the rows of q, unprepared (EXECUTE of a string), as text, in order
CREATE FUNCTION r77_rows(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  rows text[] := '{}';
BEGIN
  FOR r IN EXECUTE q LOOP
    rows := rows || r::text;
  END LOOP;
  RETURN array_to_string(ARRAY(SELECT x FROM unnest(rows) x ORDER BY x), ';');
END $$;
-- for each query of qs (%s: the view), how many differ between the node
-- on, off and the oracle
CREATE FUNCTION r77_check(qs text[], OUT reads int, OUT diff_off int, OUT diff_oracle int)
LANGUAGE plpgsql AS $$
DECLARE
  q text;
  r_on text;
BEGIN
  reads := 0; diff_off := 0; diff_oracle := 0;
  FOREACH q IN ARRAY qs LOOP
    PERFORM set_config('stream_ext.key_read_scan', 'on', true);
    r_on := r77_rows(format(q, 'r77_v'));
    PERFORM set_config('stream_ext.key_read_scan', 'off', true);
    IF r_on IS DISTINCT FROM r77_rows(format(q, 'r77_v')) THEN
      diff_off := diff_off + 1;
      RAISE NOTICE 'differs from the node off: %', q;
    END IF;
    IF r_on IS DISTINCT FROM r77_rows(format(q, 'r77_oracle')) THEN
      diff_oracle := diff_oracle + 1;
      RAISE NOTICE 'differs from the oracle: %', q;
    END IF;
    reads := reads + 1;
  END LOOP;
  PERFORM set_config('stream_ext.key_read_scan', 'on', true);
END $$;

SELECT * FROM r77_check(ARRAY[
  'SELECT * FROM %s WHERE k = 3',            -- materialization and delta
  'SELECT * FROM %s WHERE k = 15',           -- materialization only
  'SELECT * FROM %s WHERE k = 30',           -- delta only
  'SELECT * FROM %s WHERE k = 99',           -- neither
  'SELECT * FROM %s WHERE k = NULL',
  'SELECT * FROM %s WHERE k IS NULL',
  'SELECT * FROM %s WHERE 4 = k AND n > 5',
  'SELECT * FROM %s WHERE k = 4 AND n > 500',
  'SELECT * FROM %s WHERE k = 2 OR k = 3',
  'SELECT * FROM %s WHERE k < 3',
  'SELECT * FROM %s',
  'SELECT n FROM %s WHERE k = 3 UNION ALL SELECT n FROM %1$s WHERE k = 15',
  'SELECT g, (SELECT n FROM %s WHERE k = g) FROM generate_series(1, 3) g',
  'SELECT g, v.n FROM generate_series(1, 3) g JOIN %s v ON v.k = 5',
  'SELECT g, v.n FROM generate_series(1, 3) g JOIN %s v ON v.k = g',
  'SELECT g, s.n FROM generate_series(1, 3) g, LATERAL (SELECT n FROM %s WHERE k = g) s',
  'WITH c AS (SELECT * FROM %s) SELECT * FROM c WHERE k = 7',
  'SELECT * FROM (SELECT * FROM %s) s WHERE k = 8',
  'SELECT k, n FROM %s WHERE k IN (SELECT 6) ',
  'SELECT count(*) FROM %s WHERE k = 6 HAVING count(*) > 0',
  'SELECT a.n, b.n FROM %s a, %1$s b WHERE a.k = 1 AND b.k = 2',
  'SELECT a.n, b.n FROM %s a, %1$s b WHERE a.k = 1 AND b.k > 18'
]);

-- which reads are planned without the UNION ALL
SET client_min_messages = debug1;
SELECT * FROM r77_v WHERE k = 3;
SELECT * FROM r77_v WHERE k = 99;
SELECT * FROM r77_v WHERE k = NULL;
SELECT n FROM r77_v WHERE k = 3 UNION ALL SELECT n FROM r77_v WHERE k = 15;
SELECT g, (SELECT n FROM r77_v WHERE k = g) FROM generate_series(1, 3) g;
WITH c AS (SELECT * FROM r77_v) SELECT * FROM c WHERE k = 7;
SELECT a.n, b.n FROM r77_v a, r77_v b WHERE a.k = 1 AND b.k = 2;
-- not taken: planned again, as before
SELECT a.n, b.n FROM r77_v a, r77_v b WHERE a.k = 1 AND b.k > 18;
-- no conjunct with the key's equality operator: no stub
SELECT k, n FROM r77_v WHERE k < 2 ORDER BY k;
SELECT k, n FROM r77_v WHERE k = 2 OR k = 3 ORDER BY k;
SELECT count(*) FROM r77_v;
SET stream_ext.key_read_scan = off;
SELECT * FROM r77_v WHERE k = 3;
RESET stream_ext.key_read_scan;
SET client_min_messages = warning;
EXPLAIN (COSTS OFF) SELECT * FROM r77_v WHERE k = 3;
EXPLAIN (COSTS OFF) SELECT g, (SELECT n FROM r77_v WHERE k = g) FROM generate_series(1, 3) g;

-- privileges: without SELECT on the view, refused either way; the view's
-- owner without SELECT on its materialization, refused either way
CREATE ROLE r77_reader;
SET ROLE r77_reader;
SELECT n FROM r77_v WHERE k = 3;
SELECT g, (SELECT n FROM r77_v WHERE k = g) FROM generate_series(1, 3) g;
RESET ROLE;
CREATE ROLE r77_owner;
GRANT USAGE, CREATE ON SCHEMA public TO r77_owner;
GRANT SELECT ON r77 TO r77_owner;
SET ROLE r77_owner;
CREATE VIEW r77_o WITH (continuous) AS SELECT k, count(*) AS n FROM r77 GROUP BY k;
GRANT SELECT ON r77_o TO r77_reader;
RESET ROLE;
SELECT r77_feed('VALUES (3, 1::float8)');
SET ROLE r77_reader;
SELECT n FROM r77_o WHERE k = 3;
RESET ROLE;
REVOKE SELECT ON r77_o_mrel FROM r77_owner;
SET ROLE r77_reader;
SELECT n FROM r77_o WHERE k = 3;
SET stream_ext.key_read_scan = off;
SELECT n FROM r77_o WHERE k = 3;
RESET stream_ext.key_read_scan;
RESET ROLE;
GRANT SELECT ON r77_o_mrel TO r77_owner;
SET ROLE r77_reader;
SELECT n FROM r77_o WHERE k = 3;
RESET ROLE;

-- the view replaced (a rebuild swapped in), then dropped and made again,
-- between reads; a prepared statement's plan is made again each time
SET plan_cache_mode = force_generic_plan;
PREPARE r77_q(int) AS SELECT k, s FROM r77_v WHERE k = $1;
EXECUTE r77_q(3);
SELECT * FROM r77_v WHERE k = 3;
CREATE OR REPLACE VIEW r77_v WITH (continuous) AS
  SELECT k, count(*) AS n, sum(x) AS s, max(x) AS hi, min(x) AS lo FROM r77 GROUP BY k;
SELECT stream_ext.wait_backfill('r77_v');
SELECT r77_feed('VALUES (3, 7::float8)');
SET client_min_messages = debug1;
SELECT * FROM r77_v WHERE k = 3;
SET client_min_messages = warning;
CREATE OR REPLACE VIEW r77_oracle AS
  SELECT k, count(*) AS n, sum(x) AS s, max(x) AS hi, min(x) AS lo FROM r77_log GROUP BY k;
SELECT * FROM r77_check(ARRAY['SELECT * FROM %s WHERE k = 3', 'SELECT * FROM %s WHERE k = 30']);
EXECUTE r77_q(3);
DROP VIEW r77_v;
SELECT * FROM r77_v WHERE k = 3;
EXECUTE r77_q(3);
CREATE VIEW r77_v WITH (continuous) AS SELECT k, sum(x) AS s FROM r77 GROUP BY k;
SELECT r77_feed('VALUES (3, 10::float8)');
SET client_min_messages = debug1;
SELECT * FROM r77_v WHERE k = 3;
SET client_min_messages = warning;
EXECUTE r77_q(3);
SELECT k, sum(x) AS s FROM r77_log WHERE k = 3 GROUP BY k;
RESET plan_cache_mode;

DEALLOCATE r77_q;
DROP VIEW r77_o;
REVOKE ALL ON SCHEMA public FROM r77_owner;
REVOKE ALL ON r77 FROM r77_owner;
DROP ROLE r77_owner;
DROP VIEW r77_v;
DROP VIEW r77_oracle;
DROP OWNED BY r77_reader;
DROP ROLE r77_reader;
DROP TABLE r77_log;
DROP FUNCTION r77_feed(text), r77_rows(text), r77_check(text[]);
DROP TABLE r77;

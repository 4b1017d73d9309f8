-- Deferred count(DISTINCT) (query/analyze.c, "Deferred count(DISTINCT)"):
-- a view that appends keeps each batch's distinct values per group in an
-- array column of its delta (stream_ext.distinct_values()), compaction
-- moves them into the side table and the count, reads count the values of
-- the delta the side table lacks.  Every view equals its query over a
-- logged copy of the rows, before and after compaction, for batches of 1
-- to 5,000 rows, NULL values and keys, FILTER, rolled-back batches,
-- windows and TTL, roll-ups created over an uncompacted delta; a text
-- value keeps the side-table statement per batch.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET client_min_messages = warning;
CREATE SCHEMA w2d;
SET search_path = w2d, public;
SET stream_ext.compact_threshold = -1;   -- no compaction by writers

-- the aggregate itself: sorted, each value once, NULLs left out
SELECT stream_ext.distinct_values(x) FROM unnest(ARRAY[3, 1, NULL, 3, 2, 1]) x;
SELECT stream_ext.distinct_values(x) IS NULL AS none FROM unnest(ARRAY[NULL::int]) x;
SELECT k, stream_ext.distinct_values(d) FROM (VALUES (1, date '2024-01-02'), (1, date '2024-01-01'), (2, NULL), (1, date '2024-01-02')) v(k, d) GROUP BY k ORDER BY k;

SELECT stream_ext.create_stream('w2d.ev', 'k int, v int, g text, ts timestamptz');
CREATE TABLE ev_log (k int, v int, g text, ts timestamptz);

CREATE TABLE shapes (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO shapes VALUES
 ('d_w2', 'SELECT k, count(*) AS n, avg(v) AS a, max(v) AS hi, count(DISTINCT v) AS nd FROM {src} GROUP BY k'),
 ('d_total', 'SELECT count(*) AS n, count(DISTINCT v) AS nd, count(DISTINCT k) AS nk FROM {src}'),
 ('d_two', 'SELECT k % 3 AS b, v % 2 AS odd, count(DISTINCT v) FILTER (WHERE v > 10) AS big, count(DISTINCT v % 7) AS m7 FROM {src} GROUP BY 1, 2'),
 ('d_tumble', 'SELECT stream_ext.tumble(ts, ''10 minutes'') AS w, count(DISTINCT k) AS nk FROM {src} GROUP BY 1'),
 ('d_text', 'SELECT k % 4 AS b, count(DISTINCT g) AS ng, count(DISTINCT v) AS nv FROM {src} GROUP BY 1');

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name, replace(r.query, '{src}', 'ev'));
  END LOOP;
END $$;

-- which views defer: those that append, unless a count(DISTINCT) has a
-- text value (hashed side table: the view upserts)
SELECT s.name, v.delta IS NOT NULL AS appends,
       (SELECT count(*) FROM pg_attribute a WHERE a.attrelid = v.delta AND a.attname LIKE '%\_values' AND NOT a.attisdropped) AS values_columns,
       cardinality(v.distinct_sql) AS statements,
       coalesce(v.distinct_sql[1] LIKE '%stream_ext.maintain_rollup()%', false) AS written_through_for_rollups
  FROM shapes s JOIN stream_ext.view_catalog v ON v.view = s.name::regclass ORDER BY 1;

-- each view against its query over the logged rows
CREATE FUNCTION check_all(lbl text) RETURNS TABLE (label text, name text, differing bigint) LANGUAGE plpgsql AS $$
DECLARE r record; n bigint;
BEGIN
  FOR r IN SELECT * FROM w2d.shapes ORDER BY shapes.name LOOP
    EXECUTE format('SELECT count(*) FROM ((TABLE w2d.%I EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE w2d.%I)) d',
                   r.name, replace(r.query, '{src}', 'w2d.ev_log'), replace(r.query, '{src}', 'w2d.ev_log'), r.name) INTO n;
    check_all.label := $1; check_all.name := r.name; check_all.differing := n;
    RETURN NEXT;
  END LOOP;
END $$;

CREATE FUNCTION rows(lo int, hi int) RETURNS TABLE (k int, v int, g text, ts timestamptz) LANGUAGE sql AS $$
  SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE i % 13 END,
         CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 37) % 50 END,
         'g' || (i % 3),
         timestamptz '2024-01-01 00:00:00+00' + i * interval '7 seconds'
    FROM generate_series(lo, hi) i
$$;
CREATE FUNCTION load(lo int, hi int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO w2d.ev_log SELECT * FROM w2d.rows(lo, hi);
  INSERT INTO w2d.ev SELECT * FROM w2d.rows(lo, hi);
$$;

-- batches of 1, 2, 7, 100 and 5,000 rows
SELECT load(1, 1); SELECT load(2, 3); SELECT load(4, 10); SELECT load(11, 110);
SELECT * FROM check_all('small batches') WHERE differing <> 0;
SELECT load(111, 5110);
SELECT count(*) > 0 AS delta_has_arrays FROM d_w2_delta WHERE distinct_count_4_values IS NOT NULL;
SELECT * FROM check_all('before compaction') WHERE differing <> 0;

-- a rolled-back batch leaves nothing behind
BEGIN;
INSERT INTO ev VALUES (1, 999, 'gx', now()), (NULL, 998, 'gx', now());
SELECT nd FROM d_w2 WHERE k = 1;
ROLLBACK;
SELECT * FROM check_all('after rollback') WHERE differing <> 0;

-- compaction folds the arrays into the side tables and the counts
SELECT stream_ext.compact(name::regclass) > 0 AS compacted FROM shapes WHERE name <> 'd_text' ORDER BY name;
SELECT count(*) AS delta_rows FROM d_w2_delta;
SELECT * FROM check_all('after compaction') WHERE differing <> 0;

-- the same values again (already counted), new ones, and one batch per row
SELECT load(1, 5110 - 5000);
SELECT * FROM check_all('values seen before') WHERE differing <> 0;
DO $$ BEGIN FOR i IN 5111..5140 LOOP PERFORM w2d.load(i, i); END LOOP; END $$;
SELECT * FROM check_all('single rows') WHERE differing <> 0;

-- a roll-up made over an uncompacted delta counts the values still in it,
-- and stays exact at every commit after
CREATE VIEW d_w2_up WITH (continuous) AS
  SELECT k % 2 AS p, sum(n) AS n, stream_ext.combine(nd) AS nd FROM d_w2 GROUP BY 1;
CREATE FUNCTION check_up(lbl text) RETURNS TABLE (label text, differing bigint) LANGUAGE sql AS $$
  SELECT $1, count(*) FROM ((TABLE w2d.d_w2_up EXCEPT ALL SELECT k % 2, count(*), count(DISTINCT v) FROM w2d.ev_log GROUP BY 1)
     UNION ALL (SELECT k % 2, count(*), count(DISTINCT v) FROM w2d.ev_log GROUP BY 1 EXCEPT ALL TABLE w2d.d_w2_up)) d
$$;
SELECT * FROM check_up('roll-up created');
SELECT load(6000, 6400);
SELECT * FROM check_up('after a batch');
SELECT * FROM check_all('upstream written through') WHERE differing <> 0;
SELECT stream_ext.compact('d_w2') > 0 AS compacted;
SELECT * FROM check_up('after compaction');
SELECT * FROM check_all('after compaction 2') WHERE differing <> 0;

-- TTL drops expired groups with their values, in the delta's arrays as
-- in the side table: the same rows loaded again count again
SELECT stream_ext.create_stream('w2d.old', 'v int, ts timestamptz');
CREATE VIEW d_ttl WITH (continuous, ttl = '1 day', ttl_column = 'w') AS
  SELECT stream_ext.tumble(ts, '1 hour') AS w, count(*) AS n, count(DISTINCT v) AS nd FROM old GROUP BY 1;
INSERT INTO old SELECT i % 5, timestamptz '2024-01-01' + i * interval '1 minute' FROM generate_series(1, 100) i;
SELECT stream_ext.compact('d_ttl') > 0 AS compacted;
INSERT INTO old SELECT i % 9, timestamptz '2024-01-01' + i * interval '1 minute' FROM generate_series(1, 100) i;
SELECT w, n, nd FROM d_ttl ORDER BY w;
SELECT count(*) > 0 AS maintained FROM stream_ext.run_maintenance();
SELECT count(*) AS groups_left FROM d_ttl;
SELECT aux_tables[1] AS ttl_aux FROM stream_ext.view_catalog WHERE view = 'd_ttl'::regclass \gset
SELECT count(*) AS values_left FROM :ttl_aux;
INSERT INTO old SELECT i % 3, timestamptz '2024-01-01' + i * interval '1 minute' FROM generate_series(1, 100) i;
SELECT w, n, nd FROM d_ttl ORDER BY w;

DROP SCHEMA w2d CASCADE;

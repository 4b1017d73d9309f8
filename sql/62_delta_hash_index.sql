-- stream_ext.delta_key_index = hash (docs/continuous-views.md): a view
-- created then gets a hash index on the first key of its delta instead of
-- the btree on its keys -- about half the writer's cost per delta row.  Its
-- rows equal the query over the stream whatever is compacted, NULL keys,
-- wide keys and colliding key hashes included; a read by equality on the
-- first key is index scans of both tables; a range or IS NULL on the key
-- reads the whole delta, and is exact.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;
-- the merged read's plan (a read fixing every key is otherwise one node,
-- StreamExtKeyRead: regress 74)
SET stream_ext.key_read_scan = off;

-- the scans of a query's plan, one row per relation: 'index' when every scan
-- of it is an index (only, bitmap) scan, else the scan's node types
CREATE FUNCTION r62_scans(q text) RETURNS TABLE (rel text, scans text)
LANGUAGE plpgsql AS $$
DECLARE
  p json;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO p;
  RETURN QUERY
    WITH RECURSIVE n(node) AS (
      SELECT p -> 0 -> 'Plan'
      UNION ALL
      SELECT c FROM n, json_array_elements(n.node -> 'Plans') c)
    SELECT node ->> 'Relation Name',
           CASE WHEN bool_and(node ->> 'Node Type' IN ('Index Scan', 'Index Only Scan', 'Bitmap Heap Scan'))
                THEN 'index'
                ELSE string_agg(DISTINCT node ->> 'Node Type', ', ') END
      FROM n WHERE node ->> 'Relation Name' IS NOT NULL
     GROUP BY 1 ORDER BY 1;
END $$;

-- the setting: on, hash, off (and the boolean spellings of before)
SHOW stream_ext.delta_key_index;
SET stream_ext.delta_key_index = hash;
SHOW stream_ext.delta_key_index;
SET stream_ext.delta_key_index = false;
SHOW stream_ext.delta_key_index;
SET stream_ext.delta_key_index = true;
SHOW stream_ext.delta_key_index;
SET stream_ext.delta_key_index = btree;
SHOW stream_ext.delta_key_index;
SET stream_ext.delta_key_index = gist;

SELECT stream_ext.create_stream('r62', 'k int, ts timestamptz, t text, v int');
CREATE TABLE r62_log (k int, ts timestamptz, t text, v int);
SET stream_ext.delta_key_index = hash;
-- W1's shape: an integer and a time bucket
CREATE VIEW r62_km WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM r62 GROUP BY k, minute;
CREATE VIEW r62_k WITH (continuous) AS
  SELECT k, count(*) AS n, avg(v) AS a, max(v) AS top FROM r62 GROUP BY k;
-- a wide (text) first key, then an integer
CREATE VIEW r62_tk WITH (continuous) AS
  SELECT t, k, count(*) AS n, min(v) AS lo FROM r62 GROUP BY t, k;
-- wide keys whose stream_ext.key_hash() keeps 2 bits: groups share hashes
SET stream_ext.debug_key_hash_bits = 2;
CREATE VIEW r62_coll WITH (continuous) AS
  SELECT t, count(*) AS n, sum(v) AS s FROM r62 GROUP BY t;
RESET stream_ext.debug_key_hash_bits;
RESET stream_ext.delta_key_index;
-- created with the default: the btree on the keys, as before
CREATE VIEW r62_default WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM r62 GROUP BY k, minute;

-- each delta's index: a hash index on the first key (the default: the btree)
SELECT tablename, indexdef FROM pg_indexes
 WHERE tablename LIKE 'r62\_%\_delta' ORDER BY 1, 2;

CREATE FUNCTION r62_feed(lo int, hi int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT nullif(i % 500, 7) AS k,
                    timestamptz '2026-01-01 00:00:00+00' + i * interval '250 ms' AS ts,
                    CASE WHEN i % 11 = 0 THEN NULL ELSE 'key ' || (i % 40) END AS t,
                    (i * seed) % 1000 AS v
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r62 SELECT * FROM r)
  INSERT INTO r62_log SELECT * FROM r;
$$;

-- rows differing between each view and its query over the logged rows
CREATE FUNCTION r62_check() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'r62_km', count(*) FROM (
    (TABLE r62_km EXCEPT ALL
     SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v) FROM r62_log GROUP BY 1, 2)
    UNION ALL
    (SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v) FROM r62_log GROUP BY 1, 2
     EXCEPT ALL TABLE r62_km)) d
  UNION ALL
  SELECT 'r62_k', count(*) FROM (
    (TABLE r62_k EXCEPT ALL SELECT k, count(*), avg(v), max(v) FROM r62_log GROUP BY k)
    UNION ALL
    (SELECT k, count(*), avg(v), max(v) FROM r62_log GROUP BY k EXCEPT ALL TABLE r62_k)) d
  UNION ALL
  SELECT 'r62_tk', count(*) FROM (
    (TABLE r62_tk EXCEPT ALL SELECT t, k, count(*), min(v) FROM r62_log GROUP BY t, k)
    UNION ALL
    (SELECT t, k, count(*), min(v) FROM r62_log GROUP BY t, k EXCEPT ALL TABLE r62_tk)) d
  UNION ALL
  SELECT 'r62_coll', count(*) FROM (
    (TABLE r62_coll EXCEPT ALL SELECT t, count(*), sum(v) FROM r62_log GROUP BY t)
    UNION ALL
    (SELECT t, count(*), sum(v) FROM r62_log GROUP BY t EXCEPT ALL TABLE r62_coll)) d
  UNION ALL
  SELECT 'r62_default', count(*) FROM (
    (TABLE r62_default EXCEPT ALL TABLE r62_km)
    UNION ALL
    (TABLE r62_km EXCEPT ALL TABLE r62_default)) d
$$;

CREATE FUNCTION r62_compact_all() RETURNS boolean LANGUAGE sql AS $$
  SELECT bool_and(stream_ext.compact(v) >= 0)
    FROM unnest(ARRAY['r62_km', 'r62_k', 'r62_tk', 'r62_coll', 'r62_default']) v
$$;

-- batches of every size, one compaction between, then more in the delta
SELECT r62_feed(1, 1, 3);
SELECT r62_feed(2, 11, 3);
SELECT r62_feed(12, 5000, 3);
SELECT * FROM r62_check();
SELECT r62_compact_all();
SELECT r62_feed(5001, 5100, 7);
SELECT r62_feed(5101, 9000, 11);
SELECT r62_feed(1, 300, 13);
SELECT (SELECT count(*) FROM r62_km_delta) > 1000 AS delta_rows,
       (SELECT count(*) FROM r62_km_delta WHERE k IS NULL) > 0 AS null_key_delta_rows,
       (SELECT count(*) FROM r62_km_mrel WHERE k IS NULL) > 0 AS null_key_matrel_rows,
       (SELECT count(DISTINCT stream_ext_key_hash) < count(DISTINCT t)
          FROM (SELECT t, stream_ext_key_hash FROM r62_coll_mrel
                UNION ALL SELECT t, stream_ext_key_hash FROM r62_coll_delta) u) AS hashes_collide;
SELECT * FROM r62_check();

-- reads filtered on keys equal the query over the rows: equality on the
-- first key (index), on both keys, IS NULL, a range, a text key
SELECT (SELECT array_agg(row(minute, n, s) ORDER BY minute) FROM r62_km WHERE k = 42) =
       (SELECT array_agg(row(minute, n, s) ORDER BY minute)
          FROM (SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
                  FROM r62_log WHERE k = 42 GROUP BY 1) q) AS key_42,
       (SELECT row(n, s) FROM r62_km WHERE k = 243 AND minute = '2026-01-01 00:01:00+00') =
       (SELECT row(count(*), sum(v)) FROM r62_log
         WHERE k = 243 AND date_bin('1 minute', ts, '2000-01-01') = '2026-01-01 00:01:00+00') AS key_243_minute,
       (SELECT row(n, a, top) FROM r62_k WHERE k IS NULL) =
       (SELECT row(count(*), avg(v), max(v)) FROM r62_log WHERE k IS NULL) AS key_null,
       (SELECT array_agg(row(k, n, a, top) ORDER BY k) FROM r62_k WHERE k BETWEEN 5 AND 9) =
       (SELECT array_agg(row(k, n, a, top) ORDER BY k)
          FROM (SELECT k, count(*) AS n, avg(v) AS a, max(v) AS top FROM r62_log
                 WHERE k BETWEEN 5 AND 9 GROUP BY k) q) AS range_5_9,
       (SELECT array_agg(row(k, n, lo) ORDER BY k) FROM r62_tk WHERE t = 'key 3') =
       (SELECT array_agg(row(k, n, lo) ORDER BY k)
          FROM (SELECT k, count(*) AS n, min(v) AS lo FROM r62_log WHERE t = 'key 3' GROUP BY k) q) AS text_key,
       (SELECT array_agg(row(t, n, s) ORDER BY t) FROM r62_coll WHERE t IN ('key 1', 'key 5', 'key 9')) =
       (SELECT array_agg(row(t, n, s) ORDER BY t)
          FROM (SELECT t, count(*) AS n, sum(v) AS s FROM r62_log
                 WHERE t IN ('key 1', 'key 5', 'key 9') GROUP BY t) q) AS colliding_keys;

-- the plans: equality on the first key is index scans of the
-- materialization and of the delta (a hash index scan); a range on it
-- scans the delta
ANALYZE r62_km_mrel, r62_km_delta, r62_k_mrel, r62_k_delta, r62_tk_mrel, r62_tk_delta;
SELECT * FROM r62_scans('SELECT * FROM r62_km WHERE k = 42');
SELECT * FROM r62_scans('SELECT * FROM r62_km WHERE k = 243 AND minute = ''2026-01-01 00:01:00+00''');
SELECT * FROM r62_scans('SELECT * FROM r62_k WHERE k = 42');
SELECT * FROM r62_scans('SELECT * FROM r62_tk WHERE t = ''key 3''');
SELECT * FROM r62_scans('SELECT * FROM r62_k WHERE k BETWEEN 40 AND 50');

-- after compaction, exact; a delta vacuumed empty, then more rows, exact
SELECT r62_compact_all();
SELECT * FROM r62_check();
VACUUM r62_km_delta, r62_k_delta, r62_tk_delta, r62_coll_delta;
SELECT r62_feed(9001, 9500, 17);
SELECT * FROM r62_check();

-- CREATE OR REPLACE in place builds the new delta with the setting of then
SET stream_ext.replace_in_place = on;
SET stream_ext.delta_key_index = hash;
CREATE OR REPLACE VIEW r62_default WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM r62 GROUP BY k, minute;
RESET stream_ext.delta_key_index;
RESET stream_ext.replace_in_place;
SELECT pg_get_indexdef(i.indexrelid) ~ 'USING hash \(k\)' AS hash_index
  FROM stream_ext.view_catalog c JOIN pg_index i ON i.indrelid = c.delta
 WHERE c.view = 'r62_default'::regclass;
SELECT r62_feed(9501, 9800, 19);
SELECT * FROM r62_check();

DROP VIEW r62_km, r62_k, r62_tk, r62_coll, r62_default;
DROP TABLE r62_log;
DROP FUNCTION r62_scans(text), r62_feed(int, int, int), r62_check(), r62_compact_all();

-- Reads of views that append (docs/internals.md, "Reading"): the view is
-- the materialization (+) the delta merged per group.  Its rows equal the
-- query over the stream whatever is compacted, NULL keys included, and a
-- read filtered on keys is index scans of both tables, never a scan of the
-- whole delta.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;
-- the merged read's plan (a read fixing every key is otherwise one node,
-- StreamExtKeyRead: regress 74)
SET stream_ext.key_read_scan = off;

-- the scans of a query's plan, one row per relation: 'index' when every scan
-- of it is an index (only, bitmap) scan, else the scan's node types
CREATE FUNCTION r58_scans(q text) RETURNS TABLE (rel text, scans text)
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

-- the text of a query's plan
CREATE FUNCTION r58_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  result text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
    result := result || line || E'\n';
  END LOOP;
  RETURN result;
END $$;

SELECT stream_ext.create_stream('r58', 'k int, c int, t text, v int');
CREATE TABLE r58_log (k int, c int, t text, v int);
CREATE VIEW r58_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS top FROM r58 GROUP BY k;
CREATE VIEW r58_kc WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s FROM r58 GROUP BY k, c;
CREATE VIEW r58_t WITH (continuous) AS
  SELECT t, count(*) AS n, min(v) AS lo FROM r58 GROUP BY t;
CREATE VIEW r58_all WITH (continuous) AS
  SELECT count(*) AS n, sum(v) AS s FROM r58;

-- the indexes reads use: the delta's key lookup index, and the
-- materialization's partial index of NULL keys unless the key is one
-- fixed-width column (besides the materialization's unique index)
SELECT tablename, indexdef FROM pg_indexes
 WHERE tablename LIKE 'r58\_%\_delta' OR (tablename LIKE 'r58\_%\_mrel' AND indexdef LIKE '%IS NULL%')
 ORDER BY 1, 2;

CREATE FUNCTION r58_feed(lo int, hi int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT nullif(i % 2000, 7) AS k, CASE WHEN i % 997 = 0 THEN NULL ELSE i % 3 END AS c,
                    CASE WHEN i % 11 = 0 THEN NULL ELSE 't' || (i % 300) END AS t,
                    (i * seed) % 1000 AS v
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r58 SELECT * FROM r)
  INSERT INTO r58_log SELECT * FROM r;
$$;

-- rows differing between each view and its query over the logged rows
CREATE FUNCTION r58_check() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'r58_k', count(*) FROM (
    (TABLE r58_k EXCEPT ALL SELECT k, count(*), sum(v), avg(v), max(v) FROM r58_log GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v), avg(v), max(v) FROM r58_log GROUP BY k EXCEPT ALL TABLE r58_k)) d
  UNION ALL
  SELECT 'r58_kc', count(*) FROM (
    (TABLE r58_kc EXCEPT ALL SELECT k, c, count(*), sum(v) FROM r58_log GROUP BY k, c)
    UNION ALL
    (SELECT k, c, count(*), sum(v) FROM r58_log GROUP BY k, c EXCEPT ALL TABLE r58_kc)) d
  UNION ALL
  SELECT 'r58_t', count(*) FROM (
    (TABLE r58_t EXCEPT ALL SELECT t, count(*), min(v) FROM r58_log GROUP BY t)
    UNION ALL
    (SELECT t, count(*), min(v) FROM r58_log GROUP BY t EXCEPT ALL TABLE r58_t)) d
  UNION ALL
  SELECT 'r58_all', count(*) FROM (
    (TABLE r58_all EXCEPT ALL SELECT count(*), sum(v) FROM r58_log)
    UNION ALL
    (SELECT count(*), sum(v) FROM r58_log EXCEPT ALL TABLE r58_all)) d
$$;

-- everything compacted, then batches in the delta (NULL keys on both sides)
SELECT r58_feed(1, 20000, 3);
SELECT stream_ext.compact(v) >= 0 AS compacted FROM unnest(ARRAY['r58_k', 'r58_kc', 'r58_t', 'r58_all']) v;
SELECT r58_feed(1, 1500, 7);
SELECT r58_feed(3000, 3500, 11);
SELECT (SELECT count(*) FROM r58_k_delta) > 1000 AS delta_rows,
       (SELECT count(*) FROM r58_k_delta WHERE k IS NULL) AS null_key_delta_rows,
       (SELECT count(*) FROM r58_k_mrel WHERE k IS NULL) AS null_key_matrel_rows;
SELECT * FROM r58_check();

-- reads filtered on keys equal the query over the rows, NULL keys included
SELECT (SELECT row(n, s, a, top) FROM r58_k WHERE k = 42) =
       (SELECT row(count(*), sum(v), avg(v), max(v)) FROM r58_log WHERE k = 42) AS key_42,
       (SELECT row(n, s, a, top) FROM r58_k WHERE k IS NULL) =
       (SELECT row(count(*), sum(v), avg(v), max(v)) FROM r58_log WHERE k IS NULL) AS key_null,
       (SELECT array_agg(row(k, c, n, s) ORDER BY k, c) FROM r58_kc WHERE k BETWEEN 5 AND 9) =
       (SELECT array_agg(row(k, c, n, s) ORDER BY k, c)
          FROM (SELECT k, c, count(*) AS n, sum(v) AS s FROM r58_log WHERE k BETWEEN 5 AND 9
                 GROUP BY k, c) q) AS range_5_9,
       (SELECT array_agg(row(t, n, lo) ORDER BY t) FROM r58_t WHERE t IN ('t1', 't2')) =
       (SELECT array_agg(row(t, n, lo) ORDER BY t)
          FROM (SELECT t, count(*) AS n, min(v) AS lo FROM r58_log WHERE t IN ('t1', 't2')
                 GROUP BY t) q) AS text_keys;

-- the plans: a read by key is index scans of the materialization and of the
-- delta (planned with the tables' statistics, no enable_* settings)
ANALYZE r58_k_mrel, r58_k_delta, r58_kc_mrel, r58_kc_delta, r58_t_mrel, r58_t_delta;
SELECT * FROM r58_scans('SELECT * FROM r58_k WHERE k = 42');
SELECT * FROM r58_scans('SELECT * FROM r58_k WHERE k BETWEEN 40 AND 50');
SELECT * FROM r58_scans('SELECT * FROM r58_kc WHERE k = 42 AND c = 0');
SELECT * FROM r58_scans('SELECT * FROM r58_t WHERE t = ''t42''');
-- a full read hashes no group key: no key_hash() call in its plan
SELECT r58_plan('SELECT * FROM r58_k') NOT LIKE '%key_hash(%' AS no_key_hash,
       r58_plan('SELECT * FROM r58_t') NOT LIKE '%key_hash(%' AS no_key_hash_wide;

-- after a compaction, and with an empty delta, the same
SELECT stream_ext.compact(v) >= 0 AS compacted FROM unnest(ARRAY['r58_k', 'r58_kc', 'r58_t', 'r58_all']) v;
SELECT * FROM r58_check();
SELECT r58_feed(1, 10, 13);
SELECT * FROM r58_check();

-- a delta vacuumed empty is not planned as one row: a full read hashes it
-- once instead of rescanning it per materialization row (query/reads.c)
SELECT stream_ext.compact('r58_k') > 0 AS compacted;
VACUUM ANALYZE r58_k_delta;
SELECT relpages, reltuples FROM pg_class WHERE relname = 'r58_k_delta';
SELECT r58_plan('SELECT count(*) FROM r58_k') NOT LIKE '%Nested Loop Anti Join%' AS no_nested_loop_anti_join;
SELECT * FROM r58_check();

-- stream_ext.delta_key_index = off: the delta of a view created then has no
-- index (writers insert no index entry); reads are the same, and a read by
-- key scans the delta
SET stream_ext.delta_key_index = off;
CREATE VIEW r58_noidx WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s FROM r58 GROUP BY k, c;
RESET stream_ext.delta_key_index;
SELECT count(*) AS delta_indexes FROM pg_indexes WHERE tablename = 'r58_noidx_delta';
SELECT r58_feed(100, 900, 17);
SELECT count(*) AS differing FROM (
  (TABLE r58_noidx EXCEPT ALL SELECT k, c, count(*), sum(v) FROM r58_log GROUP BY k, c)
  UNION ALL
  (SELECT k, c, count(*), sum(v) FROM r58_log GROUP BY k, c EXCEPT ALL TABLE r58_noidx)) d;
SELECT (SELECT row(n, s) FROM r58_noidx WHERE k = 142 AND c = 1) =
       (SELECT row(count(*), sum(v)) FROM r58_log WHERE k = 142 AND c = 1) AS key_142;

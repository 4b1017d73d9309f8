-- One large batch into a view whose count(DISTINCT) has a hashed side table
-- (text keys or values: the per-batch side-table statement, docs/
-- continuous-views.md "Exact distinct counts").  The statement probes the
-- side table once per new (keys, value) pair and inserts the new pairs into
-- it; the probe must stay an index probe even when the side table's
-- statistics say it is tiny (vacuumed or analyzed while small), or one
-- INSERT of n rows rescans everything it inserted so far: O(n^2).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA se59;
SET search_path = se59, public;

SELECT stream_ext.create_stream('bb_s', 'k text, x text');
CREATE VIEW bb_v WITH (continuous) AS
  SELECT k, count(DISTINCT x) AS d FROM bb_s GROUP BY k;
INSERT INTO bb_s VALUES ('a', 'b'), ('c', 'd');
-- the side table's statistics: two rows on one page
VACUUM ANALYZE bb_v_distinct_count_1_mrel;
SELECT relpages, reltuples FROM pg_class
  WHERE oid = 'bb_v_distinct_count_1_mrel'::regclass;

-- The probe of the plan for a batch of 100,000 rows: an index probe on the
-- hash, never a sequential scan of the side table.
SELECT count(*) FILTER (WHERE l ~ 'Seq Scan on bb_v_distinct_count_1_mrel') AS seq_scans,
       count(*) FILTER (WHERE l ~ '(Index|Bitmap Heap) Scan .*on bb_v_distinct_count_1_mrel') AS index_probes
  FROM stream_ext.explain('bb_v', batch_rows => 100000) AS l;

-- A 20,000-row statement (about 200 million tuple visits with the
-- sequential probe) is exact.
INSERT INTO bb_s SELECT 'k' || (i % 100), 'x' || i FROM generate_series(1, 20000) i;
INSERT INTO bb_s SELECT 'k' || (i % 100), 'x' || i FROM generate_series(1, 300) i;
SELECT count(*) AS groups, sum(d) AS distinct_pairs FROM bb_v;
SELECT * FROM bb_v WHERE k IN ('a', 'k1') ORDER BY k;

-- The floor is only a floor: the statistics of a large side table win.
ANALYZE bb_v_distinct_count_1_mrel;
SELECT reltuples >= 20000 AS analyzed_large FROM pg_class
  WHERE oid = 'bb_v_distinct_count_1_mrel'::regclass;
SELECT count(*) FILTER (WHERE l ~ 'Seq Scan on bb_v_distinct_count_1_mrel') AS seq_scans
  FROM stream_ext.explain('bb_v', batch_rows => 100000) AS l;

SET client_min_messages = warning;
DROP SCHEMA se59 CASCADE;

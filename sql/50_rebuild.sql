-- CREATE OR REPLACE VIEW v WITH (continuous) AS q2 built beside v while
-- ingest goes on, then swapped in (docs/continuous-views.md#changing-a-view):
-- the statement returns at once, v stays its old self until the swap, and
-- then equals q2 as plain SQL over the stream -- batches of every size,
-- NULLs, a rolled-back batch during the rebuild.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA rb;
SET search_path = rb, public;
CREATE ROLE rb_reader;
GRANT USAGE ON SCHEMA rb TO rb_reader;

SELECT stream_ext.create_stream('rb.ev', 'k int, v int, s text');
CREATE VIEW cv WITH (continuous) AS SELECT k, count(*) AS n FROM ev GROUP BY k;
INSERT INTO ev SELECT g % 7, g, 's' || (g % 13) FROM generate_series(1, 20000) g;
INSERT INTO ev VALUES (NULL, NULL, NULL), (1, NULL, 'x'), (NULL, 5, NULL);
INSERT INTO ev VALUES (3, 3, 's3');
INSERT INTO ev SELECT 2, g, NULL FROM generate_series(1, 5) g;
GRANT SELECT ON cv TO rb_reader;
CREATE VIEW busy AS SELECT k FROM cv WHERE n > 100;
CREATE TEMP TABLE before AS SELECT 'rb.cv'::regclass::oid AS oid, (SELECT count(*) FROM ev) AS handover_rows;
SET stream_ext.rebuild_batch_blocks = 3;

-- 1. new columns at the end: built beside, swapped in place
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS total, count(DISTINCT s) AS kinds FROM ev GROUP BY k;
-- at once: v is still the old view, the rebuild is under way
SELECT string_agg(attname, ', ' ORDER BY attnum) AS columns_now FROM pg_attribute
 WHERE attrelid = 'rb.cv'::regclass AND attnum > 0;
SELECT kind, state IN ('running', 'ready', 'done') AS under_way, blocks_total > 0 AS has_blocks
  FROM stream_ext.backfill_progress WHERE view = 'rb.cv'::regclass;
-- ingest goes on: single rows, a batch, NULLs, a rolled-back batch
INSERT INTO ev VALUES (1, 100, 'new');
INSERT INTO ev SELECT g % 3, g, NULL FROM generate_series(1, 3000) g;
INSERT INTO ev VALUES (NULL, 7, 'n');
BEGIN;
INSERT INTO ev SELECT 4, 1000000, 'gone' FROM generate_series(1, 50);
ROLLBACK;
SELECT stream_ext.wait_backfill('rb.cv', '10 minutes');
SELECT 'rb.cv'::regclass::oid = (SELECT oid FROM before) AS same_oid,
       has_table_privilege('rb_reader', 'rb.cv', 'SELECT') AS grant_kept;
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT k, n, total, kinds FROM cv
   EXCEPT ALL SELECT k, count(*), sum(v), count(DISTINCT s) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v), count(DISTINCT s) FROM ev GROUP BY k
   EXCEPT ALL SELECT k, n, total, kinds FROM cv)) d;
SELECT * FROM busy ORDER BY k;
-- progress: every row visible at the hand-over, once; the shadow is gone
SELECT kind, state, rows_done = (SELECT handover_rows FROM before) AS rows_exact,
       rows_estimate = rows_done AS estimate_exact, blocks_done = blocks_total AS all_blocks
  FROM stream_ext.backfill_progress WHERE view = 'rb.cv'::regclass;
SELECT relname FROM pg_class WHERE relnamespace = 'rb'::regnamespace AND relkind IN ('r', 'v')
 ORDER BY relname;
SELECT count(*) AS catalog_rows FROM stream_ext.view_catalog WHERE view = 'rb.cv'::regclass;
-- batches after the swap count once
INSERT INTO ev SELECT 1, 1, 'after' FROM generate_series(1, 7);
SELECT (SELECT n FROM cv WHERE k = 1) = (SELECT count(*) FROM ev WHERE k = 1) AS counted_once;
SET ROLE rb_reader;
SELECT n > 0 AS reader_reads FROM cv WHERE k = 2;
RESET ROLE;

-- 2. columns changed while a view depends on it: refused at CREATE, naming it
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k, sum(v) AS total FROM ev GROUP BY k;
SELECT count(*) AS pending FROM stream_ext.rebuilds WHERE view = 'rb.cv'::regclass AND state = 'running';
SELECT count(*) AS shadows FROM pg_class WHERE relname LIKE 'cv\_rebuild%';

-- 3. without dependents: dropped and created again at the swap, grants carried over
DROP VIEW busy;
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT v % 3 AS r, avg(v) AS mean, count(*) AS n, min(s) AS first FROM ev GROUP BY 1;
INSERT INTO ev VALUES (2, 5, 'during'), (NULL, NULL, NULL);
SELECT stream_ext.wait_backfill('rb.cv', '10 minutes');
SELECT 'rb.cv'::regclass::oid <> (SELECT oid FROM before) AS new_oid,
       has_table_privilege('rb_reader', 'rb.cv', 'SELECT') AS grant_kept;
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT r, mean, n, first FROM cv EXCEPT ALL SELECT v % 3, avg(v), count(*), min(s) FROM ev GROUP BY 1)
  UNION ALL
  (SELECT v % 3, avg(v), count(*), min(s) FROM ev GROUP BY 1 EXCEPT ALL SELECT r, mean, n, first FROM cv)) d;
SELECT state FROM stream_ext.backfill_progress WHERE view = 'rb.cv'::regclass;

-- 4. backfill_from: only the rows that arrived since, and the live ones
SELECT stream_ext.create_stream('rb.ev2', 'k int');
CREATE VIEW cv2 WITH (continuous) AS SELECT k, count(*) AS n FROM ev2 GROUP BY k;
INSERT INTO ev2 (k, arrival_timestamp) VALUES (1, '2000-01-01 00:00+00'), (2, '2000-01-01 00:00+00'),
  (1, '2020-01-01 00:00+00'), (3, '2021-01-01 00:00+00');
CREATE OR REPLACE VIEW cv2 WITH (continuous, backfill_from = '2010-01-01 00:00+00') AS
  SELECT k, count(*) AS n, min(arrival_timestamp) AS since FROM ev2 GROUP BY k;
INSERT INTO ev2 (k, arrival_timestamp) VALUES (2, '2000-01-01 00:00+00'), (4, '2022-01-01 00:00+00');
SELECT stream_ext.wait_backfill('rb.cv2');
SELECT k, n, since FROM cv2 ORDER BY k;

-- 5. stream_ext.replace_in_place = on: today's replacement in the transaction
SET stream_ext.replace_in_place = on;
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT v % 3 AS r, avg(v) AS mean, count(*) AS n, min(s) AS first, max(k) AS top FROM ev GROUP BY 1;
SELECT count(*) AS rebuilds FROM stream_ext.rebuilds WHERE view = 'rb.cv'::regclass AND state <> 'done';
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT r, n, top FROM cv EXCEPT ALL SELECT v % 3, count(*), max(k) FROM ev GROUP BY 1)
  UNION ALL
  (SELECT v % 3, count(*), max(k) FROM ev GROUP BY 1 EXCEPT ALL SELECT r, n, top FROM cv)) d;
RESET stream_ext.replace_in_place;

RESET search_path;
DROP SCHEMA rb CASCADE;
DROP ROLE rb_reader;

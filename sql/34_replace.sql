-- CREATE OR REPLACE VIEW v WITH (continuous) AS q2 (docs/continuous-views.md#changing-a-view):
-- the view takes q2 and equals it as plain SQL over the stream's rows; in
-- place (OID, grants, dependent views kept) when the old columns stay,
-- dropped and created again when they change and nothing depends on it.
-- Built beside the view and swapped in (sql/50_rebuild): each replacement
-- waits for its swap with stream_ext.wait_backfill().
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA repl;
SET search_path = repl, public;
CREATE ROLE repl_reader;
GRANT USAGE ON SCHEMA repl TO repl_reader;

SELECT stream_ext.create_stream('repl.ev', 'k int, v int, ts timestamptz');
CREATE VIEW cv WITH (continuous) AS SELECT k, count(*) AS n FROM ev GROUP BY k;
INSERT INTO ev SELECT g % 5, g, '2024-01-01'::timestamptz + g * interval '1 second' FROM generate_series(1, 1000) g;
INSERT INTO ev VALUES (NULL, NULL, NULL);
GRANT SELECT ON cv TO repl_reader;
COMMENT ON VIEW cv IS 'hits per key';
CREATE VIEW busy_keys AS SELECT k FROM cv WHERE n > 100;
CREATE TEMP TABLE before AS SELECT 'repl.cv'::regclass::oid AS oid;

-- 1. new columns at the end: replaced in place
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS total, max(ts) AS last FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('repl.cv');
SELECT 'repl.cv'::regclass::oid = (SELECT oid FROM before) AS same_oid,
       has_table_privilege('repl_reader', 'repl.cv', 'SELECT') AS grant_kept,
       obj_description('repl.cv'::regclass, 'pg_class') AS comment;
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT k, n, total, last FROM cv EXCEPT ALL SELECT k, count(*), sum(v), max(ts) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v), max(ts) FROM ev GROUP BY k EXCEPT ALL SELECT k, n, total, last FROM cv)) d;
SELECT * FROM busy_keys ORDER BY k;
-- the old parts are gone: one materialization, one catalog row, and batches count once
SELECT count(*) AS materializations FROM pg_class WHERE relname LIKE 'cv\_mrel%' AND relkind = 'r' AND relnamespace = 'repl'::regnamespace;
SELECT count(*) AS catalog_rows FROM stream_ext.view_catalog WHERE view = 'repl.cv'::regclass;
INSERT INTO ev SELECT 1, 1, '2024-01-02' FROM generate_series(1, 7);
SELECT n, total FROM cv WHERE k = 1;
SELECT count(*), sum(v) FROM ev WHERE k = 1;
SET ROLE repl_reader;
SELECT k, n FROM cv WHERE k = 2;
RESET ROLE;

-- 2. columns changed while a view depends on it: refused, nothing changes
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k, sum(v) AS total FROM ev GROUP BY k;
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k, count(*)::int AS n FROM ev GROUP BY k;
SELECT n, total FROM cv WHERE k = 1;

-- 3. without dependents: dropped and created again, grants carried over
DROP VIEW busy_keys;
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT v % 3 AS r, avg(v) AS mean, count(*) AS n FROM ev GROUP BY 1;
SELECT stream_ext.wait_backfill('repl.cv');
SELECT 'repl.cv'::regclass::oid <> (SELECT oid FROM before) AS new_oid,
       has_table_privilege('repl_reader', 'repl.cv', 'SELECT') AS grant_kept;
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT r, mean, n FROM cv EXCEPT ALL SELECT v % 3, avg(v), count(*) FROM ev GROUP BY 1)
  UNION ALL
  (SELECT v % 3, avg(v), count(*) FROM ev GROUP BY 1 EXCEPT ALL SELECT r, mean, n FROM cv)) d;
INSERT INTO ev VALUES (2, 5, now());
SELECT r, n FROM cv WHERE r = 2;
SELECT count(*) FROM ev WHERE v % 3 = 2;

-- 4. another stream and a window: the old stream's trigger goes with the old query
SELECT stream_ext.create_stream('repl.ev2', 'k int, ts timestamptz');
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT w.window_start AS r, count(*)::numeric AS mean, count(*) AS n
    FROM ev2, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1;
SELECT stream_ext.wait_backfill('repl.cv');
SELECT tgname LIKE 'stream_ext%' AS ours, count(*) FROM pg_trigger
 WHERE tgrelid = 'repl.ev'::regclass AND NOT tgisinternal AND tgname <> 'stream_ext_append_only' GROUP BY 1;
INSERT INTO ev VALUES (1, 1, now());
INSERT INTO ev2 VALUES (1, '2024-01-01 00:07:00+00'), (2, '2024-01-01 00:12:00+00');
SELECT r, n FROM cv ORDER BY r;

-- 5. a rolled-back or failing replacement leaves the view as it was
BEGIN;
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k AS r, avg(k) AS mean, count(*) AS n FROM ev2 GROUP BY k;
ROLLBACK;
SELECT r, n FROM cv ORDER BY r;
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k AS r, avg(nope) AS mean, count(*) AS n FROM ev2 GROUP BY k;
INSERT INTO ev2 VALUES (3, '2024-01-01 00:13:00+00');
SELECT r, n FROM cv ORDER BY r;

-- 6. what is refused
CREATE OR REPLACE VIEW cv AS SELECT 1 AS r;
CREATE OR REPLACE VIEW cv WITH (continuous = false) AS SELECT 1 AS r;
CREATE VIEW plain AS SELECT 1 AS x;
CREATE OR REPLACE VIEW plain WITH (continuous) AS SELECT k, count(*) AS x FROM ev GROUP BY k;
GRANT SELECT ON ev2 TO repl_reader;
SET ROLE repl_reader;
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k AS r, avg(k) AS mean, count(*) AS n FROM ev2 GROUP BY k;
RESET ROLE;
-- CREATE OR REPLACE of a name that does not exist creates the view
CREATE OR REPLACE VIEW fresh WITH (continuous) AS SELECT count(*) AS n FROM ev;
SELECT n = (SELECT count(*) FROM ev) AS fresh_ok FROM fresh;

RESET search_path;
DROP SCHEMA repl CASCADE;
DROP ROLE repl_reader;

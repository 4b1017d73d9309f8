-- A rebuild beside a continuous view (sql/50_rebuild): cancelled, it leaves
-- the view exactly as it was, still maintained; with backfill_auto_swap = off
-- it waits in state 'ready' for stream_ext.swap_backfill(); who may cancel
-- or swap; a second CREATE OR REPLACE while one is pending; DROP VIEW
-- during a rebuild; retention waits for the backfill.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA rc;
SET search_path = rc, public;
CREATE ROLE rc_owner;
CREATE ROLE rc_other;
GRANT USAGE, CREATE ON SCHEMA rc TO rc_owner;
GRANT USAGE ON SCHEMA rc TO rc_other;

SELECT stream_ext.create_stream('rc.ev', 'k int, v int');
GRANT SELECT, INSERT ON rc.ev TO rc_owner;
SET ROLE rc_owner;
CREATE VIEW cv WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS total FROM ev GROUP BY k;
INSERT INTO ev SELECT g % 5, g FROM generate_series(1, 5000) g;
GRANT SELECT ON cv TO rc_other;
CREATE TEMP TABLE before_parts AS
  SELECT c.relname, c.oid FROM pg_class c WHERE c.relnamespace = 'rc'::regnamespace AND relkind IN ('r', 'v');
CREATE TEMP TABLE before_def AS SELECT pg_get_viewdef('rc.cv'::regclass) AS d;

-- 1. auto swap off: the rebuild waits in 'ready'; v is the old view meanwhile
SET stream_ext.backfill_auto_swap = off;
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('rc.cv');
SELECT state, rows_done FROM stream_ext.backfill_progress WHERE view = 'rc.cv'::regclass;
INSERT INTO ev VALUES (1, 1000000), (NULL, 3);
-- readers of v see the old definition, maintained
SELECT count(*) = 0 AS old_view_exact FROM (
  (SELECT k, n, total FROM cv EXCEPT ALL SELECT k, count(*), sum(v) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v) FROM ev GROUP BY k EXCEPT ALL SELECT k, n, total FROM cv)) d;
-- a second CREATE OR REPLACE while one is pending: refused
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k, count(*) AS n FROM ev GROUP BY k;
-- someone else may neither swap nor cancel it
SET ROLE rc_other;
SELECT stream_ext.swap_backfill('rc.cv');
SELECT stream_ext.cancel_backfill('rc.cv');
SET ROLE rc_owner;

-- 2. cancel: the shadow goes, v is exactly as it was, still maintained
SELECT stream_ext.cancel_backfill('rc.cv');
SELECT state FROM stream_ext.backfill_progress WHERE view = 'rc.cv'::regclass;
SELECT c.relname, c.oid = b.oid AS same FROM pg_class c FULL JOIN before_parts b USING (relname)
 WHERE c.relnamespace = 'rc'::regnamespace AND c.relkind IN ('r', 'v') OR c.oid IS NULL ORDER BY 1;
SELECT string_agg(attname, ', ' ORDER BY attnum) AS columns FROM pg_attribute
 WHERE attrelid = 'rc.cv'::regclass AND attnum > 0;
SELECT pg_get_viewdef('rc.cv'::regclass) = d AS same_definition FROM before_def;
SELECT count(*) AS catalog_rows FROM stream_ext.view_catalog WHERE stream = 'rc.ev'::regclass;
INSERT INTO ev VALUES (2, 2);
SELECT count(*) = 0 AS old_view_exact FROM (
  (SELECT k, n, total FROM cv EXCEPT ALL SELECT k, count(*), sum(v) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v) FROM ev GROUP BY k EXCEPT ALL SELECT k, n, total FROM cv)) d;
SELECT stream_ext.cancel_backfill('rc.cv') AS nothing_to_cancel;

-- 3. swap_backfill() by the owner
CREATE OR REPLACE VIEW cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('rc.cv');
INSERT INTO ev VALUES (3, 33);
SELECT stream_ext.swap_backfill('rc.cv');
SELECT stream_ext.wait_backfill('rc.cv');
SELECT count(*) = 0 AS new_view_exact FROM (
  (SELECT k, n, total, top FROM cv EXCEPT ALL SELECT k, count(*), sum(v), max(v) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v), max(v) FROM ev GROUP BY k EXCEPT ALL SELECT k, n, total, top FROM cv)) d;
SELECT stream_ext.swap_backfill('rc.cv');

-- 4. DROP VIEW during a rebuild takes the shadow along
CREATE OR REPLACE VIEW cv WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top, min(v) AS low FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('rc.cv');
DROP VIEW cv_rebuild;
DROP VIEW cv;
SELECT count(*) AS left_over FROM pg_class WHERE relnamespace = 'rc'::regnamespace AND relkind IN ('r', 'v');
SELECT count(*) AS rebuild_rows FROM stream_ext.rebuilds WHERE stream = 'rc.ev'::regclass;
RESET stream_ext.backfill_auto_swap;
RESET ROLE;

RESET search_path;
DROP SCHEMA rc CASCADE;
DROP OWNED BY rc_owner, rc_other;
DROP ROLE rc_owner, rc_other;

-- Shared maintenance: one trigger per stream maintains all its continuous
-- views, and views with the same owner, FROM, WHERE and GROUP BY share one
-- aggregation of the batch (one statement: the aggregation as a CTE, one
-- store per view).  Every view equals its query as plain SQL over the
-- stream, whatever shares what, for batches of 1, 100 and 10,000 rows with
-- NULLs and a rolled-back batch.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

CREATE ROLE sh_b;
CREATE ROLE sh_c;
CREATE SCHEMA sh;
GRANT USAGE, CREATE ON SCHEMA sh TO sh_b, sh_c;
SELECT stream_ext.create_stream('sh.ev', 'k int, ts timestamptz, v int, w text');
GRANT SELECT ON sh.ev TO sh_b;
GRANT SELECT (k, ts, v, w) ON sh.ev TO sh_c;

-- three views by (k, minute) sharing one aggregation; v_count's count(*)
-- is also v_sum's n: computed once
CREATE VIEW sh.v_sum WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s
    FROM sh.ev GROUP BY k, minute;
CREATE VIEW sh.v_range WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS m, min(v) AS lo, max(v) AS hi, avg(v) AS mean,
         count(w) AS ws
    FROM sh.ev GROUP BY 1, 2;
CREATE VIEW sh.v_count WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, count(DISTINCT v) AS dv
    FROM sh.ev GROUP BY k, minute;
-- not shared: another WHERE; no GROUP BY; allowed_lateness; another owner
CREATE VIEW sh.v_big WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s
    FROM sh.ev WHERE v > 50 GROUP BY k, minute;
CREATE VIEW sh.v_all WITH (continuous) AS
  SELECT count(*) AS n, sum(v) AS s, max(w) AS w FROM sh.ev;
CREATE VIEW sh.v_late WITH (continuous, allowed_lateness = '1 hour') AS
  SELECT k, stream_ext.tumble(ts, '1 minute') AS win, count(*) AS n, sum(v) AS s
    FROM sh.ev GROUP BY 1, 2;
SET ROLE sh_b;
CREATE VIEW sh.v_b WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s
    FROM sh.ev GROUP BY k, minute;
RESET ROLE;
-- sh_c: two views sharing; only v_c_w reads column w
SET ROLE sh_c;
CREATE VIEW sh.v_c WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sh.ev GROUP BY k;
CREATE VIEW sh.v_c_w WITH (continuous) AS
  SELECT k, count(w) AS ws, max(v) AS hi FROM sh.ev GROUP BY k;
RESET ROLE;

-- one trigger on the stream for all of them
SELECT tgname, tgfoid::regproc, tgnargs FROM pg_trigger
 WHERE tgrelid = 'sh.ev'::regclass AND NOT tgisinternal ORDER BY tgname;

-- each view against its query over the stream (0 = equal)
CREATE FUNCTION sh.check_views() RETURNS TABLE (view text, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE
  q record;
  n bigint;
BEGIN
  FOR q IN SELECT * FROM (VALUES
      ('sh.v_sum', 'SELECT k, date_trunc(''minute'', ts) AS minute, count(*) AS n, sum(v) AS s FROM sh.ev GROUP BY 1, 2'),
      ('sh.v_range', 'SELECT k, date_trunc(''minute'', ts), min(v), max(v), avg(v), count(w) FROM sh.ev GROUP BY 1, 2'),
      ('sh.v_count', 'SELECT k, date_trunc(''minute'', ts), count(*), count(DISTINCT v) FROM sh.ev GROUP BY 1, 2'),
      ('sh.v_big', 'SELECT k, date_trunc(''minute'', ts), count(*), sum(v) FROM sh.ev WHERE v > 50 GROUP BY 1, 2'),
      ('sh.v_all', 'SELECT count(*), sum(v), max(w) FROM sh.ev'),
      ('sh.v_late', 'SELECT k, stream_ext.tumble(ts, ''1 minute''), count(*), sum(v) FROM sh.ev GROUP BY 1, 2'),
      ('sh.v_b', 'SELECT k, date_trunc(''minute'', ts), count(*), sum(v) FROM sh.ev GROUP BY 1, 2'),
      ('sh.v_c', 'SELECT k, count(*), sum(v) FROM sh.ev GROUP BY 1'),
      ('sh.v_c_w', 'SELECT k, count(w), max(v) FROM sh.ev GROUP BY 1'),
      ('sh.v_new', 'SELECT k, date_trunc(''minute'', ts), sum(v), count(*) FROM sh.ev GROUP BY 1, 2')) AS t(v, sql)
  LOOP
    IF to_regclass(q.v) IS NULL OR to_regclass(q.v) IN (SELECT object FROM stream_ext.invalid_objects) THEN
      CONTINUE;
    END IF;
    EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL %s)) d',
                   q.sql, q.v, q.v, q.sql) INTO n;
    view := q.v;
    differing := n;
    RETURN NEXT;
  END LOOP;
END $$;

-- batch b of n rows: event time increasing from batch to batch (nothing
-- late), every 7th k, 11th v and 5th w NULL
CREATE FUNCTION sh.batch(b int, n int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sh.ev (k, ts, v, w)
  SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i % 13 END,
         '2024-01-01 00:00:00+00'::timestamptz + b * interval '10 minutes' + (i % 400) * interval '1 second',
         CASE WHEN i % 11 = 0 THEN NULL ELSE i % 97 END,
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'w' || (i % 17) END
    FROM generate_series(1, n) i
$$;

SELECT sh.batch(1, 1);
SELECT * FROM sh.check_views() WHERE differing <> 0;
SELECT sh.batch(2, 100);
SELECT sh.batch(3, 10000);
SELECT * FROM sh.check_views() WHERE differing <> 0;
BEGIN;
SELECT sh.batch(4, 1000);
ROLLBACK;
INSERT INTO sh.ev (k, ts, v, w) VALUES (NULL, NULL, NULL, NULL);
SELECT * FROM sh.check_views();

-- the shared statement: one aggregation of the batch, three stores
SELECT line FROM stream_ext.explain('sh.v_sum') AS line WHERE line LIKE 'Shared%';
SELECT count(*) FILTER (WHERE line ~ 'Aggregate' AND line !~ 'count') AS aggregations,
       count(*) FILTER (WHERE line ~ 'Insert on') AS stores,
       count(*) FILTER (WHERE line ~ 'CTE stream_ext_shared') AS shared_cte
  FROM stream_ext.explain('sh.v_range') AS line;
-- views that do not share have their own statement
SELECT count(*) FILTER (WHERE line LIKE 'Shared%') AS shared,
       count(*) FILTER (WHERE line ~ 'Insert on') AS stores
  FROM stream_ext.explain('sh.v_big') AS line;
SELECT count(*) FILTER (WHERE line LIKE 'Shared%') AS shared FROM stream_ext.explain('sh.v_b') AS line;
SELECT count(*) FILTER (WHERE line LIKE 'Shared%') AS shared FROM stream_ext.explain('sh.v_late') AS line;
SELECT line FROM stream_ext.explain('sh.v_c') AS line WHERE line LIKE 'Shared%';

-- per-view stats from the shared statement: every view saw every batch,
-- and the groups each batch wrote into it
SELECT view, rows_in, batches, groups_updated
  FROM stream_ext.view_stats WHERE view::text LIKE 'sh.%' ORDER BY view::text;

-- CREATE VIEW between batches: it joins the group at the next batch
CREATE VIEW sh.v_new WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, sum(v) AS total, count(*) AS n
    FROM sh.ev GROUP BY k, minute;
SELECT line FROM stream_ext.explain('sh.v_sum') AS line WHERE line LIKE 'Shared%';
SELECT sh.batch(5, 500);
SELECT * FROM sh.check_views() WHERE differing <> 0;
-- DROP VIEW between batches: the others go on, the trigger stays
DROP VIEW sh.v_range;
SELECT sh.batch(6, 300);
SELECT * FROM sh.check_views() WHERE differing <> 0;
SELECT line FROM stream_ext.explain('sh.v_sum') AS line WHERE line LIKE 'Shared%';

-- an error names the views of the failing statement
CREATE VIEW sh.v_div WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, sum(100 / (v - 1000)) AS q
    FROM sh.ev GROUP BY k, minute;
\set VERBOSITY default
INSERT INTO sh.ev (k, ts, v) VALUES (1, '2024-01-01 02:00', 1000);
\set VERBOSITY terse
DROP VIEW sh.v_div;

-- revoking a privilege of one view's owner: only that view is invalid,
-- the view sharing its statement goes on
REVOKE SELECT (w) ON sh.ev FROM sh_c;
SELECT sh.batch(7, 200);
SELECT object::text, reason FROM stream_ext.invalid_objects ORDER BY 1;
SELECT * FROM sh.check_views() WHERE differing <> 0;
SELECT sh.batch(8, 200);
SELECT * FROM sh.check_views() WHERE differing <> 0;
DROP VIEW sh.v_c_w;

-- a trigger of the same function elsewhere maintains nothing, and a second
-- one on the stream does not count rows twice
CREATE TABLE sh.fake (k int, ts timestamptz, v int, w text);
CREATE TRIGGER forge AFTER INSERT ON sh.fake REFERENCING NEW TABLE AS stream_ext_new
  FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.maintain_views();
INSERT INTO sh.fake VALUES (1, '2024-01-01', 1000, 'x');
CREATE TRIGGER zz_again AFTER INSERT ON sh.ev REFERENCING NEW TABLE AS stream_ext_new
  FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.maintain_views();
SELECT sh.batch(9, 100);
SELECT * FROM sh.check_views() WHERE differing <> 0;
DROP TRIGGER zz_again ON sh.ev;
DROP TABLE sh.fake;

-- the stream's trigger goes with its last view
DROP VIEW sh.v_sum, sh.v_count, sh.v_big, sh.v_all, sh.v_late, sh.v_new, sh.v_b, sh.v_c;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'sh.ev'::regclass AND NOT tgisinternal ORDER BY 1;
SELECT sh.batch(10, 10);
CREATE VIEW sh.v_again WITH (continuous) AS SELECT k, count(*) AS n FROM sh.ev GROUP BY k;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'sh.ev'::regclass AND NOT tgisinternal ORDER BY 1;
SELECT count(*) AS differing FROM ((SELECT k, count(*) FROM sh.ev GROUP BY k EXCEPT TABLE sh.v_again)
  UNION ALL (TABLE sh.v_again EXCEPT SELECT k, count(*) FROM sh.ev GROUP BY k)) d;
-- and with the stream; no stream keeps the trigger without a view
DROP TABLE sh.ev CASCADE;
SELECT count(*) AS triggers FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
 WHERE p.proname = 'maintain_views'
   AND NOT EXISTS (SELECT 1 FROM stream_ext.view_catalog v WHERE v.stream = t.tgrelid);

DROP SCHEMA sh CASCADE;
DROP ROLE sh_b;
DROP ROLE sh_c;

-- views made before 0.3 keep their own trigger after ALTER EXTENSION
-- UPDATE; a view made after it on the same stream uses the stream's
-- trigger, and neither counts a row twice
DROP DATABASE IF EXISTS stream_ext_share_old;
CREATE DATABASE stream_ext_share_old;
\c stream_ext_share_old
SET client_min_messages = warning;
CREATE EXTENSION stream_ext VERSION '0.2';
RESET client_min_messages;
SELECT stream_ext.create_stream('old_ev', 'k int, v int');
CREATE VIEW old_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM old_ev GROUP BY k;
INSERT INTO old_ev SELECT i % 5, i FROM generate_series(1, 100) i;
ALTER EXTENSION stream_ext UPDATE;
CREATE VIEW new_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM old_ev GROUP BY k;
CREATE VIEW new_w WITH (continuous) AS SELECT k, max(v) AS hi FROM old_ev GROUP BY k;
INSERT INTO old_ev SELECT i % 7, i FROM generate_series(1, 100) i;
SELECT regexp_replace(tgname, '[0-9]+', 'N') AS tgname, tgfoid::regproc FROM pg_trigger
 WHERE tgrelid = 'old_ev'::regclass AND NOT tgisinternal ORDER BY 1;
SELECT (SELECT count(*) FROM ((SELECT k, count(*), sum(v) FROM old_ev GROUP BY k EXCEPT TABLE old_v)
          UNION ALL (TABLE old_v EXCEPT SELECT k, count(*), sum(v) FROM old_ev GROUP BY k)) d) AS old_differing,
       (SELECT count(*) FROM ((SELECT k, count(*), sum(v) FROM old_ev GROUP BY k EXCEPT TABLE new_v)
          UNION ALL (TABLE new_v EXCEPT SELECT k, count(*), sum(v) FROM old_ev GROUP BY k)) d) AS new_differing;
SELECT line FROM stream_ext.explain('new_v') AS line WHERE line LIKE 'Shared%';
SELECT count(*) FILTER (WHERE line LIKE 'Shared%') AS shared FROM stream_ext.explain('old_v') AS line;
\c contrib_regression
DROP DATABASE stream_ext_share_old;

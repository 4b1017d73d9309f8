-- Per-statement overhead (issue #16): the shortcuts of the batch skeleton
-- keep its semantics.
--  1. Settings are pinned only where the session's differ (the part that
--     costs a single-row batch most, see docs/benchmarks.md): a view's
--     maintenance sees its own TimeZone, DateStyle, extra_float_digits and
--     search_path whatever the inserting session has -- all different,
--     some, or none of them -- and the session's own are back after each
--     batch.
--  2. The planner hook skips the walk for subqueries of a statement
--     without any: combine() is still found in every place a subquery
--     can be (FROM, CTE, sublinks of SELECT, WHERE, VALUES, UPDATE,
--     INSERT ... SELECT).
--  3. view_stats folds a transaction's reports of several views under one
--     lock; views without an entry yet (first batch, after reset_stats())
--     get one, and counts stay exact.
--  4. max_event_time (the newest arrival_timestamp) is read straight from
--     the stored rows: right with NULLs and variable-width columns before
--     it, and with rows out of order.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA ovh;
SET search_path = ovh, public;

-- ---- 1. pinned settings --------------------------------------------------
SELECT stream_ext.create_stream('ovh.ev', 'k int, ts timestamptz, x float8');
SET TimeZone = 'America/New_York';
-- each key depends on one pinned setting: TimeZone (the day of ts, as
-- date; its text, under DateStyle) and extra_float_digits (x as text)
CREATE VIEW by_day WITH (continuous) AS
  SELECT (ts::date)::text AS day, count(*) AS n FROM ev GROUP BY 1;
CREATE VIEW by_text WITH (continuous) AS
  SELECT x::text AS xt, count(*) AS n FROM ev GROUP BY 1;
-- the oracle, under the views' settings
CREATE FUNCTION oracle_day() RETURNS TABLE (day text, n bigint)
  LANGUAGE sql STABLE
  SET TimeZone = 'America/New_York' SET DateStyle = 'ISO, YMD'
  AS $$ SELECT (ts::date)::text, count(*) FROM ovh.ev GROUP BY 1 $$;
CREATE FUNCTION oracle_text() RETURNS TABLE (xt text, n bigint)
  LANGUAGE sql STABLE SET extra_float_digits = 1
  AS $$ SELECT x::text, count(*) FROM ovh.ev GROUP BY 1 $$;

-- a session whose settings all differ from the pinned ones
SET TimeZone = 'Asia/Tokyo';
SET DateStyle = 'SQL, DMY';
SET extra_float_digits = 0;
INSERT INTO ev VALUES (1, '2026-03-01 02:30:00+00', 0.1);   -- Feb 28 in New York, Mar 1 in Tokyo
INSERT INTO ev VALUES (2, '2026-03-01 23:30:00+00', 1.0 / 3);
-- the session's own settings are back after each batch
SHOW TimeZone;
SHOW DateStyle;
SHOW extra_float_digits;
SHOW search_path;

-- a session that has every pinned setting already (nothing to pin)
SET search_path = pg_catalog;
SET TimeZone = 'America/New_York';
SET DateStyle = 'ISO, YMD';
SET extra_float_digits = 1;
INSERT INTO ovh.ev VALUES (3, '2026-03-02 03:00:00+00', 0.1);
SHOW search_path;
-- and one that has some of them
SET search_path = ovh, public;
SET DateStyle = 'German';
INSERT INTO ev VALUES (4, '2026-03-02 12:00:00+00', 2.0 / 3);
SHOW DateStyle;
RESET DateStyle;
RESET TimeZone;
RESET extra_float_digits;

-- each view equals its query under the view's settings
SELECT day, n FROM by_day ORDER BY day;
SELECT count(*) AS differ FROM ((TABLE by_day EXCEPT ALL SELECT * FROM oracle_day())
  UNION ALL (SELECT * FROM oracle_day() EXCEPT ALL TABLE by_day)) d;
SELECT xt, n FROM by_text ORDER BY xt;
SELECT count(*) AS differ FROM ((TABLE by_text EXCEPT ALL SELECT * FROM oracle_text())
  UNION ALL (SELECT * FROM oracle_text() EXCEPT ALL TABLE by_text)) d;

-- ---- 2. combine() wherever a subquery can be ------------------------------
SELECT stream_ext.create_stream('ovh.cl', 'url text, v int');
CREATE VIEW cl_sum WITH (continuous) AS
  SELECT url, count(*) AS n, sum(v) AS s FROM cl GROUP BY url;
INSERT INTO cl SELECT 'u' || (i % 3), i FROM generate_series(1, 30) i;
-- top level, FROM subquery, CTE, sublink in the select list and in WHERE
SELECT stream_ext.combine(n) AS n FROM cl_sum;
SELECT s FROM (SELECT stream_ext.combine(s) AS s FROM cl_sum WHERE url <> 'u0') c;
WITH t AS (SELECT stream_ext.combine(n) AS n FROM cl_sum) SELECT n FROM t;
SELECT (SELECT stream_ext.combine(s) FROM cl_sum) AS s;
SELECT 1 AS found WHERE (SELECT stream_ext.combine(n) FROM cl_sum) = 30;
-- in a VALUES list, an UPDATE and an INSERT ... SELECT
CREATE TABLE totals (what text, total numeric);
INSERT INTO totals VALUES ('n', (SELECT stream_ext.combine(n) FROM cl_sum));
INSERT INTO totals SELECT 's', stream_ext.combine(s) FROM cl_sum;
UPDATE totals SET total = total + (SELECT stream_ext.combine(n) FROM cl_sum WHERE url = 'u1')
  WHERE what = 'n';
SELECT what, total FROM totals ORDER BY what;

-- ---- 3. view_stats of several views, one transaction ----------------------
SELECT stream_ext.create_stream('ovh.st', 'k int');
CREATE VIEW st_a WITH (continuous) AS SELECT k, count(*) AS n FROM st GROUP BY k;
CREATE VIEW st_b WITH (continuous) AS SELECT count(*) AS n FROM st;
CREATE VIEW st_c WITH (continuous) AS SELECT k % 2 AS odd, sum(k) AS s FROM st GROUP BY 1;
-- first batches: none of the three has an entry yet
BEGIN;
INSERT INTO st SELECT i FROM generate_series(1, 10) i;
INSERT INTO st VALUES (11);
COMMIT;
-- all three have one; then one of them loses it
INSERT INTO st SELECT i FROM generate_series(1, 5) i;
SELECT stream_ext.reset_stats('st_b');
BEGIN;
INSERT INTO st VALUES (1), (2);
SAVEPOINT s;
INSERT INTO st VALUES (3);
ROLLBACK TO s;
COMMIT;
BEGIN;
INSERT INTO st VALUES (4);
ROLLBACK;
SELECT view, rows_in, batches, last_batch_rows FROM stream_ext.view_stats
 WHERE view::text LIKE 'st\_%' ORDER BY view::text;
SELECT (SELECT sum(n) FROM st_a) AS a, (SELECT n FROM st_b) AS b,
       (SELECT sum(s) FROM st_c) AS c, (SELECT count(*) FROM st) AS stream_rows;

-- ---- 4. max_event_time: the newest arrival_timestamp -----------------------
SELECT stream_ext.create_stream('ovh.ar', 'label text, k int');
CREATE VIEW ar_n WITH (continuous) AS SELECT k, count(*) AS n FROM ar GROUP BY k;
-- NULLs and a text column before arrival_timestamp, rows out of order
INSERT INTO ar (label, k, arrival_timestamp) VALUES
  ('a rather long label, stored out of line? no, but variable width', 1, '2026-01-01 00:00:05+00'),
  (NULL, NULL, '2026-01-01 00:00:09+00'),
  ('b', 2, '2026-01-01 00:00:01+00');
SELECT max_event_time = '2026-01-01 00:00:09+00' AS newest FROM stream_ext.view_stats WHERE view = 'ar_n'::regclass;
INSERT INTO ar (label, k, arrival_timestamp) VALUES (NULL, 3, '2026-01-01 00:00:07+00');
SELECT max_event_time = '2026-01-01 00:00:09+00' AS still_newest FROM stream_ext.view_stats WHERE view = 'ar_n'::regclass;
INSERT INTO ar (label, k, arrival_timestamp) VALUES ('c', NULL, '2026-01-01 00:01:00+00');
SELECT max_event_time = (SELECT max(arrival_timestamp) FROM ar) AS is_max FROM stream_ext.view_stats WHERE view = 'ar_n'::regclass;

SET client_min_messages = warning;
DROP SCHEMA ovh CASCADE;

-- Single-row and other small batches (docs/internals.md, "Small batches"):
-- what is cached between statements to make them cheap must never outlive
-- what it depends on.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA se28;
SET search_path = se28, public;
SET TimeZone = 'UTC';

-- Pinned settings (docs/security.md): maintenance compares the session's
-- settings with the pinned ones and sets only those that differ.  Whatever
-- the session's settings at each statement -- the defaults, all different,
-- all equal to the pinned values, different again, changed inside one
-- transaction -- the view sees the pinned ones and the session keeps its
-- own.  One group means every batch saw the same settings.
SELECT stream_ext.create_stream('pin_s', 'ts timestamptz, d interval, f float8');
CREATE VIEW pin_v WITH (continuous) AS
  SELECT ts::text AS t, d::text AS di, f::text AS ft,
         current_setting('search_path') AS sp, count(*) AS c
    FROM pin_s GROUP BY 1, 2, 3, 4;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SET extra_float_digits = -2;
SET TimeZone = 'Asia/Kolkata';
SET search_path = se28, public, pg_catalog;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SHOW DateStyle;
SHOW IntervalStyle;
SHOW extra_float_digits;
SHOW TimeZone;
SHOW search_path;
-- the session has exactly the pinned values: nothing to set
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET extra_float_digits = 1;
SET TimeZone = 'UTC';
SET search_path = pg_catalog;
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
-- and then different again, one at a time
SET DateStyle = 'German';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET IntervalStyle = 'iso_8601';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET extra_float_digits = 0;
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET TimeZone = 'America/New_York';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET search_path = se28;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
-- inside one transaction, between two statements
BEGIN;
SET LOCAL TimeZone = 'UTC';
SET LOCAL DateStyle = 'ISO, YMD';
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET LOCAL TimeZone = 'Pacific/Auckland';
SET LOCAL DateStyle = 'Postgres, DMY';
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SHOW TimeZone;
SHOW DateStyle;
COMMIT;
SHOW TimeZone;
SHOW DateStyle;
RESET ALL;
SET search_path = se28, public;
SET TimeZone = 'UTC';
SELECT * FROM pin_v;

-- Small batches run plans made for one row (docs/internals.md): every
-- batch size from 1 to 12 rows -- both sides of SE_SMALL_BATCH_ROWS (10) --
-- gives what the plain query gives, for a grouped view, count(DISTINCT),
-- an ungrouped min/max, a join, a hopping window, a roll-up of a view (its
-- own trigger) and a join of two streams (a unit of both streams' views
-- trigger, like the views sharing one aggregation of sb_s).
SELECT stream_ext.create_stream('sb_s', 'k int, ts timestamptz, v numeric, u text');
CREATE TABLE sb_dim (k int PRIMARY KEY, label text);
INSERT INTO sb_dim SELECT i, 'l' || (i % 3) FROM generate_series(0, 6) i;
CREATE VIEW sb_grouped WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s,
         avg(v) AS a, min(v) AS lo, max(u) AS hi
    FROM sb_s GROUP BY k, minute;
CREATE VIEW sb_distinct WITH (continuous) AS
  SELECT k, count(DISTINCT u) AS du, count(*) AS n FROM sb_s GROUP BY k;
CREATE VIEW sb_total WITH (continuous) AS
  SELECT count(*) AS n, min(v) AS lo, max(v) AS hi, sum(v) AS s FROM sb_s;
CREATE VIEW sb_join WITH (continuous) AS
  SELECT d.label, count(*) AS n, sum(s.v) AS s FROM sb_s s JOIN sb_dim d ON d.k = s.k GROUP BY d.label;
CREATE VIEW sb_hop WITH (continuous) AS
  SELECT k, w.window_start, count(*) AS n
    FROM sb_s, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start) GROUP BY k, w.window_start;
CREATE VIEW sb_rollup WITH (continuous) AS
  SELECT k, sum(n) AS n, sum(s) AS s FROM sb_grouped GROUP BY k;
SELECT stream_ext.create_stream('sb_t', 'k int, ts timestamptz, w int');
CREATE VIEW sb_sjoin WITH (continuous) AS
  SELECT a.k, count(*) AS pairs, count(DISTINCT b.w) AS ws, sum(a.v) AS s
    FROM sb_s a JOIN sb_t b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
   GROUP BY a.k;
CREATE FUNCTION sb_ins(b int, seed int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO se28.sb_t
    SELECT (i * 5 + seed) % 9, timestamptz '2024-01-01 00:00+00' + ((i * 53 + seed * 7) % 3600) * interval '1 second',
           (i * seed) % 4
      FROM generate_series(1, (b + 1) / 2) i;
  INSERT INTO se28.sb_s
    SELECT (i * 7 + seed) % 9, timestamptz '2024-01-01 00:00+00' + ((i * 37 + seed * 11) % 3600) * interval '1 second',
           CASE WHEN i % 5 = 0 THEN NULL ELSE ((i + seed) % 50) / 4.0 END,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'u' || ((i + seed) % 6) END
      FROM generate_series(1, b) i $$;
SELECT count(sb_ins(b, seed)) FROM generate_series(1, 12) b, generate_series(1, 3) seed;
INSERT INTO sb_s VALUES (1, '2024-01-01 00:00:01+00', 1, 'x');
INSERT INTO sb_s VALUES (NULL, NULL, NULL, NULL);
CREATE FUNCTION sb_check() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'sb_grouped', count(*) FROM (
    (SELECT * FROM se28.sb_grouped EXCEPT ALL
     SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), avg(v), min(v), max(u) FROM se28.sb_s GROUP BY 1, 2)
    UNION ALL
    (SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v), avg(v), min(v), max(u) FROM se28.sb_s GROUP BY 1, 2
     EXCEPT ALL SELECT * FROM se28.sb_grouped)) x
  UNION ALL
  SELECT 'sb_distinct', count(*) FROM (
    (SELECT * FROM se28.sb_distinct EXCEPT ALL SELECT k, count(DISTINCT u), count(*) FROM se28.sb_s GROUP BY k)
    UNION ALL
    (SELECT k, count(DISTINCT u), count(*) FROM se28.sb_s GROUP BY k EXCEPT ALL SELECT * FROM se28.sb_distinct)) x
  UNION ALL
  SELECT 'sb_total', count(*) FROM (
    (SELECT * FROM se28.sb_total EXCEPT ALL SELECT count(*), min(v), max(v), sum(v) FROM se28.sb_s)
    UNION ALL
    (SELECT count(*), min(v), max(v), sum(v) FROM se28.sb_s EXCEPT ALL SELECT * FROM se28.sb_total)) x
  UNION ALL
  SELECT 'sb_join', count(*) FROM (
    (SELECT * FROM se28.sb_join EXCEPT ALL
     SELECT d.label, count(*), sum(s.v) FROM se28.sb_s s JOIN se28.sb_dim d ON d.k = s.k GROUP BY d.label)
    UNION ALL
    (SELECT d.label, count(*), sum(s.v) FROM se28.sb_s s JOIN se28.sb_dim d ON d.k = s.k GROUP BY d.label
     EXCEPT ALL SELECT * FROM se28.sb_join)) x
  UNION ALL
  SELECT 'sb_hop', count(*) FROM (
    (SELECT * FROM se28.sb_hop EXCEPT ALL
     SELECT k, w.window_start, count(*) FROM se28.sb_s, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1, 2)
    UNION ALL
    (SELECT k, w.window_start, count(*) FROM se28.sb_s, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1, 2
     EXCEPT ALL SELECT * FROM se28.sb_hop)) x
  UNION ALL
  SELECT 'sb_rollup', count(*) FROM (
    (SELECT * FROM se28.sb_rollup EXCEPT ALL SELECT k, count(*), sum(v) FROM se28.sb_s GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v) FROM se28.sb_s GROUP BY k EXCEPT ALL SELECT * FROM se28.sb_rollup)) x
  UNION ALL
  SELECT 'sb_sjoin', count(*) FROM (
    (SELECT * FROM se28.sb_sjoin EXCEPT ALL
     SELECT a.k, count(*), count(DISTINCT b.w), sum(a.v) FROM se28.sb_s a JOIN se28.sb_t b
         ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes' GROUP BY a.k)
    UNION ALL
    (SELECT a.k, count(*), count(DISTINCT b.w), sum(a.v) FROM se28.sb_s a JOIN se28.sb_t b
         ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes' GROUP BY a.k
     EXCEPT ALL SELECT * FROM se28.sb_sjoin)) x $$;
SELECT * FROM sb_check();

-- The kept plans of both sizes are dropped with their cache entry: after
-- the stream, the table joined and a view's and the roll-up's
-- materializations change (each a relcache invalidation), single-row and
-- bigger batches still count every row once.
ALTER TABLE sb_dim ADD COLUMN extra int;
SELECT sb_ins(1, 4);
SELECT sb_ins(20, 4);
ALTER TABLE sb_s ALTER COLUMN u SET STATISTICS 50;
SELECT sb_ins(1, 5);
SELECT sb_ins(3, 5);
SELECT sb_ins(20, 5);
CREATE INDEX ON sb_grouped_mrel (minute);
CREATE INDEX ON sb_rollup_mrel (k);
SELECT sb_ins(1, 6);
SELECT sb_ins(20, 6);
SELECT * FROM sb_check();
-- (what later tests list must not see these)
DROP VIEW sb_sjoin;
DROP VIEW sb_rollup;
DROP TABLE sb_t;
CREATE OR REPLACE FUNCTION sb_ins(b int, seed int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO se28.sb_s
    SELECT (i * 7 + seed) % 9, timestamptz '2024-01-01 00:00+00' + ((i * 37 + seed * 11) % 3600) * interval '1 second',
           CASE WHEN i % 5 = 0 THEN NULL ELSE ((i + seed) % 50) / 4.0 END,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'u' || ((i + seed) % 6) END
      FROM generate_series(1, b) i $$;

-- The owner's privileges are checked at every batch, single rows too: a
-- privilege revoked between two single-row inserts stops the view at the
-- second one (docs/security.md).
CREATE ROLE se28_reader;
GRANT USAGE, CREATE ON SCHEMA se28 TO se28_reader;
GRANT SELECT ON sb_s TO se28_reader;
SET ROLE se28_reader;
CREATE VIEW se28.sb_reader WITH (continuous) AS SELECT k, count(*) AS n FROM se28.sb_s GROUP BY k;
RESET ROLE;
SELECT sb_ins(1, 7);
SELECT * FROM sb_reader WHERE k = 5;
REVOKE SELECT ON sb_s FROM se28_reader;
SELECT sb_ins(1, 7);
-- (the view now raises 42501; its materialization did not get the row)
SELECT * FROM sb_reader WHERE k = 5;
SELECT sum(state_count_1) FROM (SELECT * FROM sb_reader_mrel UNION ALL SELECT * FROM sb_reader_delta) x WHERE k = 5;
SELECT object::text, reason FROM stream_ext.invalid_objects WHERE object = 'se28.sb_reader'::regclass;
DROP VIEW sb_reader;
REVOKE ALL ON SCHEMA se28 FROM se28_reader;
DROP ROLE se28_reader;

-- Joins of two streams within a time window (query/stream_joins.c,
-- docs/joins.md).  Oracle: every view equals its query run as plain SQL
-- over all committed rows of both streams, after batches of 1 to 10,000
-- rows on either side, interleaved, out of order in time, with NULL keys
-- and rolled-back batches; a transform's rows equal the plain join.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('sj_orders', 'k int, qty int, ts timestamptz');
SELECT stream_ext.create_stream('sj_ships', 'k int, w int, ts timestamptz');

-- deterministic batches: keys 0..49 (NULL every 13th), times spread over an
-- hour and out of order
CREATE FUNCTION pg_temp.ins(side text, n int, seed int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF side = 'a' THEN
    INSERT INTO sj_orders (k, qty, ts)
      SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 + seed) % 50 END,
             (i + seed) % 10,
             timestamptz '2024-01-01 00:00:00+00' + (((i * 37 + seed * 11) % 3600)) * interval '1 second'
        FROM generate_series(1, n) i;
  ELSE
    INSERT INTO sj_ships (k, w, ts)
      SELECT CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 3 + seed) % 50 END,
             (i * seed) % 7,
             timestamptz '2024-01-01 00:00:00+00' + (((i * 53 + seed * 7) % 3600)) * interval '1 second'
        FROM generate_series(1, n) i;
  END IF;
END $$;

-- rows before the views: backfilled
SELECT pg_temp.ins('a', 200, 1), pg_temp.ins('b', 150, 2);

-- the shape of docs/joins.md
CREATE VIEW sj_per_key WITH (continuous) AS
  SELECT o.k, count(*) AS pairs, sum(o.qty * s.w) AS weighted, count(DISTINCT s.w) AS ws
    FROM sj_orders o JOIN sj_ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;

-- asymmetric window written with < and >, one group, expressions of both sides
CREATE VIEW sj_after WITH (continuous) AS
  SELECT count(*) AS n, sum(s.w - o.qty) AS d, max(s.ts - o.ts) AS longest
    FROM sj_orders o, sj_ships s
   WHERE s.k = o.k AND s.ts > o.ts AND o.ts + interval '2 minutes' >= s.ts;

-- grouped by the second stream's column and a tumbling window of the first
CREATE VIEW sj_by_w WITH (continuous) AS
  SELECT s.w, stream_ext.tumble(o.ts, '10 minutes') AS bucket, count(*) AS n
    FROM sj_orders o JOIN sj_ships s
      ON s.k = o.k AND s.ts >= o.ts - interval '1 minute' AND s.ts <= o.ts + interval '30 seconds'
   GROUP BY 1, 2;

-- a transform into a table: each joined row once
CREATE VIEW sj_pairs WITH (continuous) AS
  SELECT o.k, o.qty, s.w, o.ts AS ots, s.ts AS sts
    FROM sj_orders o JOIN sj_ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';

CREATE FUNCTION pg_temp.check() RETURNS TABLE (view text, ok boolean) LANGUAGE sql AS $$
  SELECT 'sj_per_key', NOT EXISTS (
    (SELECT * FROM sj_per_key
     EXCEPT ALL
     SELECT o.k, count(*), sum(o.qty * s.w), count(DISTINCT s.w)
       FROM sj_orders o JOIN sj_ships s
         ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
      GROUP BY o.k)
    UNION ALL
    (SELECT o.k, count(*), sum(o.qty * s.w), count(DISTINCT s.w)
       FROM sj_orders o JOIN sj_ships s
         ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
      GROUP BY o.k
     EXCEPT ALL
     SELECT * FROM sj_per_key))
  UNION ALL
  SELECT 'sj_after', (SELECT row(n, d, longest) FROM sj_after) IS NOT DISTINCT FROM
    (SELECT row(count(*), sum(s.w - o.qty), max(s.ts - o.ts))
       FROM sj_orders o, sj_ships s
      WHERE s.k = o.k AND s.ts > o.ts AND o.ts + interval '2 minutes' >= s.ts)
  UNION ALL
  SELECT 'sj_by_w', NOT EXISTS (
    (SELECT w, bucket, n FROM sj_by_w
     EXCEPT ALL
     SELECT s.w, stream_ext.tumble(o.ts, '10 minutes'), count(*)
       FROM sj_orders o JOIN sj_ships s
         ON s.k = o.k AND s.ts >= o.ts - interval '1 minute' AND s.ts <= o.ts + interval '30 seconds'
      GROUP BY 1, 2)
    UNION ALL
    (SELECT s.w, stream_ext.tumble(o.ts, '10 minutes'), count(*)
       FROM sj_orders o JOIN sj_ships s
         ON s.k = o.k AND s.ts >= o.ts - interval '1 minute' AND s.ts <= o.ts + interval '30 seconds'
      GROUP BY 1, 2
     EXCEPT ALL
     SELECT w, bucket, n FROM sj_by_w))
  UNION ALL
  SELECT 'sj_pairs', NOT EXISTS (
    (SELECT * FROM sj_pairs
     EXCEPT ALL
     SELECT o.k, o.qty, s.w, o.ts, s.ts
       FROM sj_orders o JOIN sj_ships s
         ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes')
    UNION ALL
    (SELECT o.k, o.qty, s.w, o.ts, s.ts
       FROM sj_orders o JOIN sj_ships s
         ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
     EXCEPT ALL
     SELECT * FROM sj_pairs))
$$;

-- backfilled: equal from the start (the transform into a table too)
SELECT * FROM pg_temp.check();
SELECT count(*) > 0 AS pairs_exist FROM sj_pairs;

-- batches of 1 to 10,000 rows, both sides interleaved
SELECT pg_temp.ins('b', 1, 3), pg_temp.ins('a', 1, 4), pg_temp.ins('a', 2, 5),
       pg_temp.ins('b', 7, 6), pg_temp.ins('a', 50, 7), pg_temp.ins('b', 333, 8);
SELECT * FROM pg_temp.check();
SELECT pg_temp.ins('a', 2000, 9);
SELECT pg_temp.ins('b', 10000, 10);
SELECT pg_temp.ins('a', 10000, 11);
SELECT * FROM pg_temp.check();
-- one transaction writing both streams: the second batch joins the first
BEGIN;
SELECT pg_temp.ins('a', 30, 12);
SELECT pg_temp.ins('b', 30, 13);
COMMIT;
-- rolled back: nothing of it stays
BEGIN;
SELECT pg_temp.ins('a', 500, 14);
SELECT pg_temp.ins('b', 500, 15);
ROLLBACK;
BEGIN;
SELECT pg_temp.ins('b', 40, 16);
SAVEPOINT s;
SELECT pg_temp.ins('a', 400, 17);
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.ins('a', 3, 18);
COMMIT;
SELECT * FROM pg_temp.check();
-- single rows, alternating
SELECT count(pg_temp.ins(CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, 1, 100 + i)) AS batches
  FROM generate_series(1, 60) i;
SELECT * FROM pg_temp.check();
SELECT count(*) > 1000 AS many_pairs FROM sj_pairs;

-- the catalog: the second stream and its statement
SELECT object, left_stream, right_stream, join_window,
       substring(right_sql from 'FROM \(?(public\.sj_orders s [A-Z ]+ stream_ext_new t2)[ )]') AS right_batch_from
  FROM stream_ext.stream_joins ORDER BY object::text;
-- both streams have the views trigger, the second stream also the transform's
SELECT tgrelid::regclass, regexp_replace(tgname, '[0-9]+', 'N') AS tgname FROM pg_trigger
 WHERE tgrelid IN ('sj_orders'::regclass, 'sj_ships'::regclass) AND NOT tgisinternal
   AND tgname NOT LIKE 'stream_ext_append_only%'
 ORDER BY 1, 2;

-- ---- what is refused, creating nothing ------------------------------------
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_orders p ON o.k = p.k
     AND p.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT s.k, count(o.qty) FROM sj_orders o RIGHT JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute' GROUP BY s.k;
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k;
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k AND s.ts >= o.ts;
SELECT stream_ext.create_stream('sj_third', 'k int, ts timestamptz');
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute'
    JOIN sj_third t ON t.k = o.k AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
-- retention shorter than the window
SELECT stream_ext.set_retention('sj_third', '2 minutes');
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '3 minutes';
-- a stream that keeps no rows
SELECT stream_ext.create_stream('sj_gone', 'k int, ts timestamptz', retain => false);
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_gone g ON o.k = g.k
     AND g.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
-- backfill options: a join of two streams starts from both streams' rows
CREATE VIEW sj_bad WITH (continuous, backfill = 'none') AS
  SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
CREATE VIEW sj_bad WITH (continuous, backfill_from = '2024-01-01') AS
  SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
SELECT count(*) AS bad_objects FROM pg_class WHERE relname LIKE 'sj_bad%';
-- within the retention: fine
CREATE VIEW sj_ok WITH (continuous) AS
  SELECT count(*) FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '2 minutes';
INSERT INTO sj_third VALUES (1, '2024-01-01 00:00:00+00');
SELECT (SELECT count FROM sj_ok) = (SELECT count(*) FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '2 minutes') AS ok;

-- lowering the retention below the window of a join is refused too
SELECT stream_ext.set_retention('sj_third', '1 minute');
SELECT stream_ext.set_retention('sj_third', '10 minutes');
SELECT retention FROM stream_ext.stream_catalog WHERE stream = 'sj_third'::regclass;

-- ---- privileges: the owner's, on both streams, at every batch ------------
CREATE ROLE sj_owner;
GRANT CREATE ON SCHEMA public TO sj_owner;
GRANT SELECT ON sj_orders, sj_ships TO sj_owner;
-- row-level security on the second stream that applies to the creator
ALTER TABLE sj_ships ENABLE ROW LEVEL SECURITY;
SET ROLE sj_owner;
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT count(*) AS n FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
CREATE VIEW sj_bad WITH (continuous) AS
  SELECT o.k, s.w FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
RESET ROLE;
ALTER TABLE sj_ships DISABLE ROW LEVEL SECURITY;
SET ROLE sj_owner;
CREATE VIEW sj_priv WITH (continuous) AS
  SELECT count(*) AS n FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
RESET ROLE;
INSERT INTO sj_ships VALUES (1, 1, '2024-01-01 00:10:00+00');
SELECT n = (SELECT count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes') AS priv_view_ok
  FROM sj_priv;
-- the owner loses SELECT on the second stream: a batch of the first marks
-- the view invalid, the insert goes on
REVOKE SELECT ON sj_ships FROM sj_owner;
INSERT INTO sj_orders VALUES (1, 1, '2024-01-01 00:10:00+00');
SELECT object, kind, reason FROM stream_ext.invalid_objects WHERE object = 'sj_priv'::regclass;
SELECT * FROM sj_priv;
DROP VIEW sj_priv;
REVOKE ALL ON sj_orders FROM sj_owner;
REVOKE CREATE ON SCHEMA public FROM sj_owner;
DROP ROLE sj_owner;

-- allowed_lateness is refused, as for stream-table joins
CREATE VIEW sj_bad WITH (continuous, allowed_lateness = '1 minute', time_column = 'ts') AS
  SELECT o.k, count(*) FROM sj_orders o JOIN sj_ships s ON o.k = s.k
     AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes' GROUP BY o.k;

-- ---- CREATE OR REPLACE: a join view becomes a one-stream view and back --
CREATE VIEW sj_repl WITH (continuous) AS
  SELECT count(*) AS n FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
CREATE OR REPLACE VIEW sj_repl WITH (continuous) AS SELECT count(*) AS n FROM sj_orders o;
SELECT count(*) AS repl_join_rows FROM stream_ext.stream_joins WHERE object = 'sj_repl'::regclass;
-- sj_ok still joins sj_third: its trigger stays
SELECT count(*) AS third_triggers FROM pg_trigger
 WHERE tgrelid = 'sj_third'::regclass AND tgname = 'stream_ext_maintain';
INSERT INTO sj_third VALUES (1, '2024-01-01 00:00:00+00');
INSERT INTO sj_orders VALUES (1, 1, '2024-01-01 00:00:00+00');
SELECT n = (SELECT count(*) FROM sj_orders) AS repl_counts_orders FROM sj_repl;
CREATE OR REPLACE VIEW sj_repl WITH (continuous) AS
  SELECT count(*) AS n FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
INSERT INTO sj_third VALUES (1, '2024-01-01 00:00:30+00');
SELECT n = (SELECT count(*) FROM sj_orders o JOIN sj_third t ON o.k = t.k
     AND t.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute') AS repl_join_ok,
       n > 0 AS repl_has_pairs
  FROM sj_repl;
DROP VIEW sj_repl;

-- ---- DROP: the second stream's trigger goes with the last view ------------
DROP VIEW sj_ok;
SELECT count(*) AS third_triggers FROM pg_trigger
 WHERE tgrelid = 'sj_third'::regclass AND tgname = 'stream_ext_maintain';
INSERT INTO sj_third VALUES (1, '2024-01-01 00:00:00+00');
DROP VIEW sj_per_key, sj_after, sj_by_w, sj_pairs;
SELECT count(*) AS ships_triggers FROM pg_trigger
 WHERE tgrelid = 'sj_ships'::regclass AND tgname LIKE 'stream_ext_%' AND tgname <> 'stream_ext_append_only';
SELECT count(*) AS join_rows FROM stream_ext.stream_joins;
INSERT INTO sj_ships VALUES (1, 1, now());

-- LEFT JOIN of two streams, a row without a match emitted when its window
-- closes (query/sjoin_left.c, docs/joins.md).  Oracle, exact, computed from
-- the rows alone: each batch carries its number bn, and the log keeps the
-- second stream's watermark before each of its batches (max(ts) of its rows
-- so far minus allowed_lateness).  A pair counts iff its first-stream row
-- came second, or was still open (ts + upper bound >= that watermark) when
-- the second-stream row came; a first-stream row gets its NULL row iff it
-- is closed by the final watermark (or has a NULL time) and has no counted
-- pair.  Batches of 1 to 10,000 rows on either side, interleaved, out of
-- order in time, NULL keys and times, rolled-back batches.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('lj_a', 'k int, v int, ts timestamptz, bn int, id bigint');
SELECT stream_ext.create_stream('lj_b', 'k int, w int, ts timestamptz, bn int');
CREATE TABLE lj_log (bn int PRIMARY KEY, max_b timestamptz);
CREATE SEQUENCE lj_bn;

CREATE FUNCTION pg_temp.ins(side text, n int, seed int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b int := nextval('lj_bn');
BEGIN
  IF side = 'a' THEN
    INSERT INTO lj_a (k, v, ts, bn, id)
      SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 + seed) % 30 END,
             (i + seed) % 10,
             CASE WHEN i % 29 = 0 THEN NULL ELSE
               timestamptz '2024-01-01 00:00:00+00'
               + ((i * 37 + seed * 11) % 600 + seed * 15) * interval '1 second' END,
             b, b * 100000 + i
        FROM generate_series(1, n) i;
  ELSE
    INSERT INTO lj_log SELECT b, max(ts) FROM lj_b;
    INSERT INTO lj_b (k, w, ts, bn)
      SELECT CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 3 + seed) % 30 END,
             CASE WHEN i % 11 = 0 THEN NULL ELSE (i * seed) % 7 END,
             timestamptz '2024-01-01 00:00:00+00'
               + ((i * 53 + seed * 7) % 600 + seed * 15) * interval '1 second',
             b
        FROM generate_series(1, n) i;
  END IF;
END $$;

-- rows before the views: backfilled (pairs, and the NULL rows of closed rows)
SELECT pg_temp.ins('a', 200, 1), pg_temp.ins('b', 150, 2);

-- per key, with allowed_lateness; count(*) counts NULL rows, count(b.w) not
CREATE VIEW lj_per_key WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT a.k, count(*) AS n, count(b.w) AS nb, sum(b.w) AS sw, count(DISTINCT b.w) AS dw
    FROM lj_a a LEFT JOIN lj_b b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '2 minutes' AND a.ts + interval '3 minutes'
   GROUP BY a.k;
-- one group, no lateness, a window after the row only, a WHERE clause
CREATE VIEW lj_total WITH (continuous) AS
  SELECT count(*) AS n, count(b.k) AS matched, sum(a.v) AS sv, max(b.ts) AS last_b
    FROM lj_a a LEFT JOIN lj_b b ON b.k = a.k AND b.ts > a.ts AND b.ts <= a.ts + interval '90 seconds'
   WHERE a.v <> 3;
-- grouped by the second stream's column: the NULL rows form the NULL group
CREATE VIEW lj_by_w WITH (continuous) AS
  SELECT b.w, count(*) AS n
    FROM lj_a a LEFT JOIN lj_b b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY b.w;

-- a transform into a table: each pair once, each closed row's NULL row once
CREATE VIEW lj_rows WITH (continuous) AS
  SELECT a.id, a.k, b.w, b.ts AS bts
    FROM lj_a a LEFT JOIN lj_b b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute';
-- and into a stream, counted by a view over it
SELECT stream_ext.create_stream('lj_out', 'id bigint, k int, w int');
CREATE VIEW lj_to_stream WITH (continuous, output_stream = 'lj_out') AS
  SELECT a.id, a.k, b.w FROM lj_a a LEFT JOIN lj_b b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute';
CREATE VIEW lj_out_count WITH (continuous) AS
  SELECT count(*) AS n, count(w) AS matched FROM lj_out;
-- what the table's backfill held: the stream gets the rest
CREATE TABLE lj_rows_backfilled AS SELECT * FROM lj_rows;

-- the oracle's rows of a view: pairs counted, then NULL rows of closed rows
CREATE FUNCTION pg_temp.rows(lower interval, upper interval, strict_lower boolean,
                             lateness interval)
  RETURNS TABLE (id bigint, ak int, av int, ats timestamptz, bk int, bw int, bts timestamptz)
  LANGUAGE sql AS $$
  WITH pairs AS (
    SELECT a.id, a.k AS ak, a.v AS av, a.ts AS ats, b.k AS bk, b.w AS bw, b.ts AS bts
      FROM lj_a a JOIN lj_b b ON a.k = b.k
       AND (b.ts > a.ts + lower OR (NOT strict_lower AND b.ts = a.ts + lower))
       AND b.ts <= a.ts + upper
      LEFT JOIN lj_log l ON l.bn = b.bn
     WHERE a.bn > b.bn OR l.max_b IS NULL OR a.ts + upper >= l.max_b - lateness)
  SELECT * FROM pairs
  UNION ALL
  SELECT a.id, a.k, a.v, a.ts, NULL, NULL, NULL FROM lj_a a
   WHERE (a.ts IS NULL OR a.ts + upper < (SELECT max(ts) - lateness FROM lj_b))
     AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.id = a.id)
$$;

CREATE FUNCTION pg_temp.check() RETURNS TABLE (view text, ok boolean) LANGUAGE sql AS $$
  WITH o AS (SELECT * FROM pg_temp.rows('-2 minutes', '3 minutes', false, '1 minute')),
       want AS (SELECT ak AS k, count(*) AS n, count(bw) AS nb, sum(bw) AS sw,
                       count(DISTINCT bw) AS dw FROM o GROUP BY ak)
  SELECT 'lj_per_key', NOT EXISTS ((TABLE lj_per_key EXCEPT ALL TABLE want)
                                   UNION ALL (TABLE want EXCEPT ALL TABLE lj_per_key))
  UNION ALL
  SELECT 'lj_total', (SELECT row(n, matched, sv, last_b) FROM lj_total) IS NOT DISTINCT FROM
    (SELECT row(count(*), count(bk), sum(av), max(bts))
       FROM pg_temp.rows('0', '90 seconds', true, '0') WHERE av <> 3)
  UNION ALL
  SELECT 'lj_rows', NOT EXISTS (
    (SELECT id, k, w, bts FROM lj_rows EXCEPT ALL
     SELECT id, ak, bw, bts FROM pg_temp.rows('-1 minute', '1 minute', false, '0'))
    UNION ALL
    (SELECT id, ak, bw, bts FROM pg_temp.rows('-1 minute', '1 minute', false, '0')
     EXCEPT ALL SELECT id, k, w, bts FROM lj_rows))
  UNION ALL
  -- into a stream: no backfill, the rest of the table transform's rows
  SELECT 'lj_to_stream', (SELECT row(n, matched) FROM lj_out_count) IS NOT DISTINCT FROM
    (SELECT row((SELECT count(*) FROM lj_rows) - (SELECT count(*) FROM lj_rows_backfilled),
                (SELECT count(w) FROM lj_rows) - (SELECT count(w) FROM lj_rows_backfilled)))
  UNION ALL
  SELECT 'lj_by_w', NOT EXISTS (
    (SELECT w, n FROM lj_by_w EXCEPT ALL
     SELECT bw, count(*) FROM pg_temp.rows('-1 minute', '1 minute', false, '0') GROUP BY bw)
    UNION ALL
    (SELECT bw, count(*) FROM pg_temp.rows('-1 minute', '1 minute', false, '0') GROUP BY bw
     EXCEPT ALL SELECT w, n FROM lj_by_w))
$$;

-- the refused pairs of each view, as the oracle counts them
CREATE FUNCTION pg_temp.refused(lower interval, upper interval, strict_lower boolean,
                                lateness interval) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM lj_a a JOIN lj_b b ON a.k = b.k
     AND (b.ts > a.ts + lower OR (NOT strict_lower AND b.ts = a.ts + lower))
     AND b.ts <= a.ts + upper
    JOIN lj_log l ON l.bn = b.bn
   WHERE a.bn < b.bn AND a.ts + upper < l.max_b - lateness
$$;
CREATE FUNCTION pg_temp.late_ok() RETURNS TABLE (view text, ok boolean, some_refused boolean)
  LANGUAGE sql AS $$
  SELECT l.object::text, l.late_pairs = r.n, l.late_pairs > 0
    FROM stream_ext.stream_left_joins l,
         LATERAL (SELECT CASE l.object::text
           WHEN 'lj_per_key' THEN pg_temp.refused('-2 minutes', '3 minutes', false, '1 minute')
           WHEN 'lj_total' THEN (SELECT count(*) FROM lj_a a JOIN lj_b b ON b.k = a.k
                                    AND b.ts > a.ts AND b.ts <= a.ts + interval '90 seconds'
                                   JOIN lj_log g ON g.bn = b.bn
                                  WHERE a.v <> 3 AND a.bn < b.bn
                                    AND a.ts + interval '90 seconds' < g.max_b)
           ELSE pg_temp.refused('-1 minute', '1 minute', false, '0') END AS n) r
   ORDER BY 1
$$;

-- backfilled: equal from the start, NULL rows included
SELECT * FROM pg_temp.check();
SELECT n > matched AS has_null_rows FROM lj_total;

-- batches of 1 to 10,000 rows, both sides interleaved, times out of order
SELECT pg_temp.ins('b', 1, 3), pg_temp.ins('a', 1, 4), pg_temp.ins('a', 2, 5),
       pg_temp.ins('b', 7, 6), pg_temp.ins('a', 50, 7), pg_temp.ins('b', 333, 8);
SELECT * FROM pg_temp.check();
SELECT pg_temp.ins('a', 2000, 9);
SELECT pg_temp.ins('b', 10000, 10);
SELECT pg_temp.ins('a', 10000, 11);
SELECT * FROM pg_temp.check();
-- one transaction writing both streams
BEGIN;
SELECT pg_temp.ins('a', 30, 12);
SELECT pg_temp.ins('b', 30, 13);
COMMIT;
-- rolled back on either side: nothing of it stays, the watermark neither
SELECT max_time AS before_rollback FROM stream_ext.stream_left_joins
 WHERE object = 'lj_per_key'::regclass \gset
BEGIN;
SELECT pg_temp.ins('a', 500, 14);
SELECT pg_temp.ins('b', 500, 40);
ROLLBACK;
SELECT max_time = :'before_rollback' AS watermark_rolled_back FROM stream_ext.stream_left_joins
 WHERE object = 'lj_per_key'::regclass;
BEGIN;
SELECT pg_temp.ins('b', 40, 16);
SAVEPOINT s;
SELECT pg_temp.ins('a', 400, 17);
SELECT pg_temp.ins('b', 40, 41);
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.ins('a', 3, 18);
COMMIT;
SELECT * FROM pg_temp.check();
-- single rows, alternating, moving forward in time
SELECT count(pg_temp.ins(CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, 1, 20 + i)) AS batches
  FROM generate_series(1, 60) i;
SELECT * FROM pg_temp.check();
-- late rows of the second stream: their pairs with closed rows are refused
-- and counted, their pairs with open rows kept
SELECT pg_temp.ins('b', 300, 1);
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.late_ok();
-- late rows of the first stream: their NULL rows at once
SELECT pg_temp.ins('a', 300, 2);
SELECT * FROM pg_temp.check();
SELECT count(*) > 0 AS null_rows, count(*) FILTER (WHERE bk IS NOT NULL) > 0 AS pairs
  FROM pg_temp.rows('-2 minutes', '3 minutes', false, '1 minute');

-- the query of docs/joins.md: the view equals the plain LEFT JOIN keeping
-- every pair and the NULL rows of closed rows, while no pair was refused
CREATE VIEW lj_doc WITH (continuous) AS
  SELECT a.k, count(*) AS n, count(b.w) AS matched
    FROM lj_a a LEFT JOIN lj_b b
      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
   GROUP BY a.k;
-- from here on, in order: each batch one minute later than the last, on
-- both streams, rows in order within it
CREATE FUNCTION pg_temp.ins_ordered(side text, n int, minute int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b int := nextval('lj_bn');
BEGIN
  IF side = 'a' THEN
    INSERT INTO lj_a (k, v, ts, bn, id)
      SELECT i % 30, i % 10, timestamptz '2024-01-01 01:00:00+00'
               + minute * interval '1 minute' + i * (interval '1 minute' / n), b, b * 100000 + i
        FROM generate_series(0, n - 1) i;
  ELSE
    INSERT INTO lj_log SELECT b, max(ts) FROM lj_b;
    INSERT INTO lj_b (k, w, ts, bn)
      SELECT (i * 7) % 30, i % 7, timestamptz '2024-01-01 01:00:00+00'
               + minute * interval '1 minute' + i * (interval '1 minute' / n), b
        FROM generate_series(0, n - 1) i;
  END IF;
END $$;
SELECT count(pg_temp.ins_ordered(CASE WHEN i % 3 = 0 THEN 'b' ELSE 'a' END, 100, i / 2)) AS batches
  FROM generate_series(1, 40) i;
SELECT late_pairs FROM stream_ext.stream_left_joins WHERE object = 'lj_doc'::regclass;
SELECT NOT EXISTS (
  (TABLE lj_doc EXCEPT ALL
   SELECT a.k, count(*), count(b.w)
     FROM lj_a a LEFT JOIN lj_b b
       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
    WHERE b.ts IS NOT NULL OR a.ts IS NULL
       OR a.ts + interval '5 minutes' < (SELECT max_time - allowed_lateness
                                           FROM stream_ext.stream_left_joins
                                          WHERE object = 'lj_doc'::regclass)
    GROUP BY a.k)
  UNION ALL
  (SELECT a.k, count(*), count(b.w)
     FROM lj_a a LEFT JOIN lj_b b
       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
    WHERE b.ts IS NOT NULL OR a.ts IS NULL
       OR a.ts + interval '5 minutes' < (SELECT max_time - allowed_lateness
                                           FROM stream_ext.stream_left_joins
                                          WHERE object = 'lj_doc'::regclass)
    GROUP BY a.k
   EXCEPT ALL TABLE lj_doc)) AS doc_query_ok;
SELECT * FROM pg_temp.check();

-- the catalog
SELECT object, allowed_lateness, max_time IS NOT NULL AS has_watermark,
       close_sql ~ 'LEFT JOIN' AS close_is_left_join, cardinality(close_distinct_sql) AS distinct_stmts
  FROM stream_ext.stream_left_joins ORDER BY object::text;
DROP VIEW lj_per_key, lj_total, lj_by_w, lj_doc, lj_rows, lj_to_stream;
SELECT count(*) AS left_rows FROM stream_ext.stream_left_joins;

-- stream_ext.combine(column) (docs/continuous-views.md#combine): an aggregate
-- column of a continuous view re-aggregated across the rows a query reads,
-- from the stored partial states.  Each result equals the same aggregate
-- run as plain SQL over the stream's rows those view rows cover.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE EXTENSION IF NOT EXISTS hll;
RESET client_min_messages;
CREATE SCHEMA comb;
SET search_path = comb, public;

SELECT stream_ext.create_stream('comb.clicks', 'url text, user_id int, v numeric, ts timestamptz');
CREATE VIEW per_minute WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, count(v) AS with_v, sum(v) AS total, avg(v) AS mean,
         min(v) AS lo, max(v) AS hi, stddev(v) AS sd,
         hll_add_agg(hll_hash_integer(user_id)) AS users,
         count(DISTINCT user_id) AS users_exact,
         sum(v) / count(*) AS ratio
    FROM clicks GROUP BY url, minute;

-- 3 batches, NULLs in v and url, a rolled-back batch
INSERT INTO clicks SELECT 'u' || (g % 4), g % 50, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 100 END,
                          timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second'
  FROM generate_series(1, 1000) g;
INSERT INTO clicks SELECT CASE WHEN g % 5 = 0 THEN NULL ELSE 'u' || (g % 3) END, g % 70, g % 13,
                          timestamptz '2024-01-01 00:05:00+00' + g * interval '2 seconds'
  FROM generate_series(1, 500) g;
BEGIN;
INSERT INTO clicks SELECT 'u1', 1, 1000000, timestamptz '2024-01-01 00:03:00+00' FROM generate_series(1, 10);
ROLLBACK;
INSERT INTO clicks VALUES ('u1', 999, NULL, '2024-01-01 00:02:30+00');

-- whole view, a time range, per url: combine() = the aggregate over the stream
SELECT count(*) = 0 AS all_rows_equal FROM (
  (SELECT stream_ext.combine(hits) AS n, stream_ext.combine(with_v) AS nv, stream_ext.combine(total) AS s,
          stream_ext.combine(mean) AS a, stream_ext.combine(lo) AS lo, stream_ext.combine(hi) AS hi,
          round(stream_ext.combine(sd), 10) AS sd
     FROM per_minute)
  EXCEPT ALL
  (SELECT count(*), count(v), sum(v), avg(v), min(v), max(v), round(stddev(v), 10) FROM clicks)) d;

SELECT stream_ext.combine(hits) AS n, stream_ext.combine(mean) AS a, stream_ext.combine(hi) AS hi
  FROM per_minute WHERE minute >= '2024-01-01 00:05:00+00' AND minute < '2024-01-01 00:10:00+00';
SELECT count(*) AS n, avg(v) AS a, max(v) AS hi
  FROM clicks WHERE ts >= '2024-01-01 00:05:00+00' AND ts < '2024-01-01 00:10:00+00';

SELECT count(*) = 0 AS grouped_equal FROM (
  (SELECT url, stream_ext.combine(hits), stream_ext.combine(mean), stream_ext.combine(lo)
     FROM per_minute GROUP BY url)
  EXCEPT ALL
  (SELECT url, count(*), avg(v), min(v) FROM clicks GROUP BY url)) d;

-- FILTER, ORDER BY, HAVING on the combined value, an expression around it
SELECT url, stream_ext.combine(hits) FILTER (WHERE minute < '2024-01-01 00:10:00+00') AS early,
       stream_ext.combine(total) * 2 AS twice
  FROM per_minute GROUP BY url HAVING stream_ext.combine(hits) > 300 ORDER BY url;
SELECT url, count(*) FILTER (WHERE ts < '2024-01-01 00:10:00+00') AS early, sum(v) * 2 AS twice
  FROM clicks GROUP BY url HAVING count(*) > 300 ORDER BY url;

-- an approximate distinct count merges exactly (HLL unions)
SELECT (SELECT hll_cardinality(stream_ext.combine(users)) FROM per_minute)
     = (SELECT hll_cardinality(hll_add_agg(hll_hash_integer(user_id))) FROM clicks) AS hll_union_exact;
SELECT (SELECT hll_cardinality(stream_ext.combine(users)) FROM per_minute)
     < (SELECT sum(hll_cardinality(users)) FROM per_minute) AS less_than_sum_of_minutes;

-- in a subquery, a CTE, a view over the view, a prepared statement
SELECT (SELECT stream_ext.combine(hits) FROM per_minute WHERE url = o.url) AS n, o.url
  FROM (VALUES ('u1'), ('u2')) o(url) ORDER BY o.url;
WITH c AS (SELECT stream_ext.combine(total) AS s FROM per_minute) SELECT s FROM c;
CREATE VIEW per_url AS SELECT url, stream_ext.combine(mean) AS mean FROM per_minute GROUP BY url;
SELECT * FROM per_url ORDER BY url;
PREPARE hits_since(timestamptz) AS SELECT stream_ext.combine(hits) FROM per_minute WHERE minute >= $1;
EXECUTE hits_since('2024-01-01 00:10:00+00');
INSERT INTO clicks VALUES ('u1', 1, 1, '2024-01-01 00:11:00+00');
EXECUTE hits_since('2024-01-01 00:10:00+00');

-- a view with HAVING: combine() merges the rows the view shows
CREATE VIEW busy WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM clicks GROUP BY 1, 2 HAVING count(*) > 14;
SELECT count(*) > 0 AND count(*) < (SELECT count(*) FROM per_minute) AS some_rows_hidden FROM busy;
SELECT stream_ext.combine(n) = (SELECT sum(n) FROM busy) AS having_rows,
       stream_ext.combine(s) = (SELECT sum(s) FROM busy) AS having_sum FROM busy;

-- hopping windows: the rows are windows (overlapping windows count a row once each)
CREATE VIEW hopping WITH (continuous) AS
  SELECT w.window_start, count(*) AS n, max(v) AS hi
    FROM clicks, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1;
SELECT stream_ext.combine(n) = (SELECT sum(n) FROM hopping) AS hop_rows,
       stream_ext.combine(hi) = (SELECT max(v) FROM clicks) AS hop_max FROM hopping;

-- a keyless view
CREATE VIEW totals WITH (continuous) AS SELECT count(*) AS n, avg(v) AS a FROM clicks;
SELECT stream_ext.combine(n) AS n, stream_ext.combine(a) = (SELECT avg(v) FROM clicks) AS same_avg FROM totals;

-- session windows: the rows are sessions
CREATE VIEW sessions WITH (continuous, session_gap = '30 seconds', time_column = 'ts') AS
  SELECT user_id, count(*) AS n, sum(v) AS s FROM clicks GROUP BY user_id;
SELECT stream_ext.combine(n) = (SELECT count(*) FROM clicks) AS session_rows,
       stream_ext.combine(s) = (SELECT sum(v) FROM clicks) AS session_sum FROM sessions;

-- a view recorded by an earlier version, with names as its creator's search_path saw them
UPDATE stream_ext.view_catalog SET definition = replace(definition, 'comb.clicks', 'clicks')
 WHERE view = 'comb.totals'::regclass;
SELECT definition FROM stream_ext.view_catalog WHERE view = 'comb.totals'::regclass;
SELECT stream_ext.combine(n) AS n FROM totals;

-- a reader with SELECT on the view only (the view's owner reads the materialization)
CREATE ROLE comb_reader;
GRANT USAGE ON SCHEMA comb TO comb_reader;
GRANT SELECT ON per_minute TO comb_reader;
SET ROLE comb_reader;
SELECT stream_ext.combine(hits) FROM per_minute;
SELECT count(*) FROM per_minute_mrel;
-- and no SELECT on a view means no combine() over it
SELECT stream_ext.combine(n) FROM busy;
RESET ROLE;

-- an exact count(DISTINCT) merges from its side table (more in 52_combine_distinct)
SELECT stream_ext.combine(users_exact) = (SELECT count(DISTINCT user_id) FROM clicks) AS exact_union FROM per_minute;

-- what combine() refuses
SELECT stream_ext.combine(url) FROM per_minute;
SELECT stream_ext.combine(ratio) FROM per_minute;
SELECT stream_ext.combine(hits), max(hits) FROM per_minute;
SELECT stream_ext.combine(hits) FROM (SELECT * FROM per_minute) p;
SELECT stream_ext.combine(x) FROM (VALUES (1), (2)) t(x);
SELECT stream_ext.combine(hits) OVER () FROM per_minute LIMIT 1;

-- the rest of the view is untouched
SELECT url, minute, hits, total FROM per_minute ORDER BY minute, url LIMIT 3;

RESET search_path;
DROP SCHEMA comb CASCADE;
DROP ROLE comb_reader;

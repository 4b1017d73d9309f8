-- Continuous views over continuous views (docs/continuous-views.md#views-over-views):
-- a roll-up, and a roll-up of a roll-up, equal the same query run as plain
-- SQL over the stream's rows, across batch sizes, NULL keys, rollbacks,
-- compactions at any point, a backfill at CREATE from an upstream half
-- compacted, and TTL on the fine view (which leaves the coarse one whole).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE EXTENSION IF NOT EXISTS hll;
RESET client_min_messages;
CREATE SCHEMA rollup;
SET search_path = rollup, public;

SELECT stream_ext.create_stream('rollup.clicks',
       'url text, user_id int, ts timestamptz, latency_ms float8');
CREATE VIEW clicks_per_minute WITH (continuous, ttl = '1 day', ttl_column = 'minute') AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, count(latency_ms) AS timed, sum(latency_ms) AS total,
         avg(latency_ms) AS avg_latency, min(latency_ms) AS lo, max(latency_ms) AS hi,
         hll_add_agg(hll_hash_integer(user_id)) AS users
    FROM clicks GROUP BY url, minute;

-- data before the roll-up exists: half of it compacted, half in the delta
INSERT INTO clicks SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE '/p' || (g % 4) END, g % 50,
                          timestamptz '2024-01-01 00:00:00+00' + g * interval '7 seconds',
                          CASE WHEN g % 9 = 0 THEN NULL ELSE g % 300 END
  FROM generate_series(1, 3000) g;
SELECT stream_ext.compact('clicks_per_minute') > 0 AS compacted;
INSERT INTO clicks SELECT '/p' || (g % 3), g % 70, timestamptz '2024-01-01 05:00:00+00' + g * interval '13 seconds', g % 17
  FROM generate_series(1, 1000) g;

-- the example of the docs
CREATE VIEW clicks_per_hour WITH (continuous) AS
  SELECT url, date_bin('1 hour', minute, '2000-01-01') AS hour,
         sum(hits) AS hits, stream_ext.combine(avg_latency) AS avg_latency,
         stream_ext.combine(users) AS users
    FROM clicks_per_minute
   GROUP BY 1, 2;
-- every other aggregate that merges, a WHERE on a key, a key expression
CREATE VIEW busy_hours WITH (continuous) AS
  SELECT upper(url) AS page, date_bin('1 hour', minute, '2000-01-01') AS hour,
         sum(hits) AS hits, sum(timed) AS timed, sum(total) AS total,
         min(lo) AS lo, max(hi) AS hi, stream_ext.combine(hi) AS hi2,
         hll_union_agg(users) AS users
    FROM clicks_per_minute
   WHERE url IS DISTINCT FROM '/p0'
   GROUP BY 1, 2;
-- a roll-up of the roll-up, and a keyless one
CREATE VIEW clicks_per_day WITH (continuous) AS
  SELECT date_bin('1 day', hour, '2000-01-01') AS day, sum(hits) AS hits,
         stream_ext.combine(avg_latency) AS avg_latency
    FROM clicks_per_hour GROUP BY 1;
CREATE VIEW clicks_total WITH (continuous) AS
  SELECT sum(hits) AS hits, stream_ext.combine(avg_latency) AS avg_latency
    FROM clicks_per_day;

-- what the catalog holds: the roll-up is fed by its upstream's delta
SELECT view, stream FROM stream_ext.view_catalog
 WHERE view::text LIKE 'clicks_per_%' OR view::text IN ('busy_hours', 'clicks_total') ORDER BY view::text;
SELECT tgname ~ '^stream_ext_rollup_' AS rollup_trigger, tgrelid::regclass
  FROM pg_trigger WHERE tgfoid = 'stream_ext.maintain_rollup'::regproc ORDER BY tgrelid::regclass::text;
\d clicks_per_hour

-- the oracles: each view equals its query over the stream
CREATE FUNCTION check_all(label text) RETURNS TABLE (label text, view text, equal boolean)
LANGUAGE sql AS $$
  SELECT label, 'clicks_per_hour', count(*) = 0 FROM (
    (SELECT url, hour, hits, round(avg_latency::numeric, 8), hll_cardinality(users) FROM rollup.clicks_per_hour
     EXCEPT ALL
     SELECT url, date_bin('1 hour', ts, '2000-01-01'), count(*), round(avg(latency_ms)::numeric, 8),
            hll_cardinality(hll_add_agg(hll_hash_integer(user_id)))
       FROM rollup.clicks GROUP BY 1, 2)
    UNION ALL
    (SELECT url, date_bin('1 hour', ts, '2000-01-01'), count(*), round(avg(latency_ms)::numeric, 8),
            hll_cardinality(hll_add_agg(hll_hash_integer(user_id)))
       FROM rollup.clicks GROUP BY 1, 2
     EXCEPT ALL
     SELECT url, hour, hits, round(avg_latency::numeric, 8), hll_cardinality(users) FROM rollup.clicks_per_hour)) d
  UNION ALL
  SELECT label, 'busy_hours', count(*) = 0 FROM (
    (SELECT page, hour, hits, timed, total, lo, hi, hi2, hll_cardinality(users) FROM rollup.busy_hours
     EXCEPT ALL
     SELECT upper(url), date_bin('1 hour', ts, '2000-01-01'), count(*), count(latency_ms), sum(latency_ms),
            min(latency_ms), max(latency_ms), max(latency_ms), hll_cardinality(hll_add_agg(hll_hash_integer(user_id)))
       FROM rollup.clicks WHERE url IS DISTINCT FROM '/p0' GROUP BY 1, 2)
    UNION ALL
    (SELECT upper(url), date_bin('1 hour', ts, '2000-01-01'), count(*), count(latency_ms), sum(latency_ms),
            min(latency_ms), max(latency_ms), max(latency_ms), hll_cardinality(hll_add_agg(hll_hash_integer(user_id)))
       FROM rollup.clicks WHERE url IS DISTINCT FROM '/p0' GROUP BY 1, 2
     EXCEPT ALL
     SELECT page, hour, hits, timed, total, lo, hi, hi2, hll_cardinality(users) FROM rollup.busy_hours)) d
  UNION ALL
  SELECT label, 'clicks_per_day', count(*) = 0 FROM (
    (SELECT day, hits, round(avg_latency::numeric, 8) FROM rollup.clicks_per_day
     EXCEPT ALL
     SELECT date_bin('1 day', ts, '2000-01-01'), count(*), round(avg(latency_ms)::numeric, 8)
       FROM rollup.clicks GROUP BY 1)
    UNION ALL
    (SELECT date_bin('1 day', ts, '2000-01-01'), count(*), round(avg(latency_ms)::numeric, 8)
       FROM rollup.clicks GROUP BY 1
     EXCEPT ALL
     SELECT day, hits, round(avg_latency::numeric, 8) FROM rollup.clicks_per_day)) d
  UNION ALL
  SELECT label, 'clicks_total', count(*) = 0 FROM (
    (SELECT hits, round(avg_latency::numeric, 8) FROM rollup.clicks_total
     EXCEPT ALL
     SELECT count(*), round(avg(latency_ms)::numeric, 8) FROM rollup.clicks)
    UNION ALL
    (SELECT count(*), round(avg(latency_ms)::numeric, 8) FROM rollup.clicks
     EXCEPT ALL
     SELECT hits, round(avg_latency::numeric, 8) FROM rollup.clicks_total)) d
$$;
SELECT * FROM check_all('after backfill');
SELECT count(*) AS hours, sum(hits) AS hits FROM clicks_per_hour;

-- batches of 1 .. 10,000 rows, NULL keys, NULL values, new and old groups
DO $$
DECLARE
  sizes int[] := ARRAY[1, 2, 7, 100, 1000, 10000, 1, 333];
  n int;
  i int := 0;
BEGIN
  FOREACH n IN ARRAY sizes LOOP
    i := i + 1;
    INSERT INTO rollup.clicks
    SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE '/p' || ((g + i) % 5) END, (g * i) % 97,
           timestamptz '2024-01-01 00:00:00+00' + ((g * 37 + i * 1000) % 200000) * interval '1 second',
           CASE WHEN g % 10 = 0 THEN NULL ELSE (g * i) % 500 END
      FROM generate_series(1, n) g;
  END LOOP;
END $$;
SELECT * FROM check_all('after batches of 1 to 10000 rows');

-- a rolled-back batch reaches no view; a subtransaction rolled back neither
BEGIN;
INSERT INTO clicks SELECT '/rolled-back', 1, timestamptz '2024-01-01 00:00:00+00', 1e6 FROM generate_series(1, 50);
SELECT count(*) AS seen_inside_the_transaction FROM clicks_per_hour WHERE url = '/rolled-back';
ROLLBACK;
BEGIN;
INSERT INTO clicks VALUES ('/kept', 5, '2024-01-01 03:00:00+00', 5);
SAVEPOINT s;
INSERT INTO clicks VALUES ('/kept', 6, '2024-01-01 03:00:00+00', 1e6);
ROLLBACK TO s;
COMMIT;
SELECT url, hits, avg_latency FROM clicks_per_hour WHERE url IN ('/rolled-back', '/kept');

-- compactions of any view at any time change nothing
SELECT stream_ext.compact('clicks_per_minute') > 0, stream_ext.compact('clicks_per_hour') > 0,
       stream_ext.compact('clicks_per_day') > 0;
INSERT INTO clicks SELECT '/p1', g, timestamptz '2024-01-02 10:00:00+00' + g * interval '1 minute', g FROM generate_series(1, 200) g;
SELECT stream_ext.compact('clicks_total') >= 0 AS compacted;
SELECT * FROM check_all('after compactions');

-- combine() reads a roll-up like any view; explain() shows its statement
SELECT round(stream_ext.combine(avg_latency)::numeric, 8) = (SELECT round(avg(latency_ms)::numeric, 8) FROM clicks)
       AS combine_over_rollup
  FROM clicks_per_hour;
SELECT sum(hits) = (SELECT count(*) FROM clicks) AS sum_of_rolled_up_sums, round(stream_ext.combine(avg_latency)::numeric, 8) = (SELECT round(avg(latency_ms)::numeric, 8) FROM clicks) AS combine_over_rollup_of_rollup
  FROM clicks_per_day;
-- a rolled-up sum() is numeric, as in SQL: combine() takes the aggregate columns
SELECT stream_ext.combine(hits) FROM clicks_per_day;

-- TTL on the fine view: its old groups go, the coarse views keep them
SELECT count(*) > 0 AS minutes_before FROM clicks_per_minute;
SET client_min_messages = warning;
SELECT count(*) >= 0 AS ran FROM stream_ext.run_maintenance();
RESET client_min_messages;
SELECT count(*) AS minutes_after_ttl FROM clicks_per_minute;
SELECT * FROM check_all('after TTL on the fine view');
-- and the next batch after it still adds up
INSERT INTO clicks VALUES ('/p1', 1, '2024-01-01 00:00:01+00', 1), (NULL, 2, '2024-01-03 00:00:00+00', NULL);
SELECT * FROM check_all('after a batch following TTL');

-- upstreams of other shapes: a count(DISTINCT) of an int (rolled up exactly
-- through its side table, by a roll-up and a keyless roll-up of that),
-- keyless, a tumbling window, a join with a table
SELECT stream_ext.create_stream('rollup.ev', 'k int, ts timestamptz, v int');
CREATE TABLE dim (k int PRIMARY KEY, label text);
INSERT INTO dim SELECT g, 'L' || (g % 3) FROM generate_series(0, 9) g;
CREATE VIEW ev_distinct WITH (continuous) AS
  SELECT k, count(*) AS n, count(DISTINCT v) AS dv FROM ev GROUP BY k;
CREATE VIEW ev_distinct_up WITH (continuous) AS
  SELECT k % 2 AS p, sum(n) AS n, stream_ext.combine(dv) AS dv FROM ev_distinct GROUP BY 1;
CREATE VIEW ev_distinct_all WITH (continuous) AS
  SELECT sum(n) AS n, stream_ext.combine(dv) AS dv FROM ev_distinct_up;
CREATE VIEW ev_total WITH (continuous) AS SELECT count(*) AS n, avg(v) AS a FROM ev;
CREATE VIEW ev_total_up WITH (continuous) AS SELECT sum(n) AS n, stream_ext.combine(a) AS a FROM ev_total;
CREATE VIEW ev_tumble WITH (continuous) AS
  SELECT stream_ext.tumble(ts, '1 minute') AS w, count(*) AS n FROM ev GROUP BY 1;
CREATE VIEW ev_tumble_up WITH (continuous) AS SELECT date_trunc('hour', w) AS h, sum(n) AS n FROM ev_tumble GROUP BY 1;
CREATE VIEW ev_join WITH (continuous) AS
  SELECT d.label, date_trunc('minute', e.ts) AS m, count(*) AS n FROM ev e JOIN dim d ON d.k = e.k GROUP BY 1, 2;
CREATE VIEW ev_join_up WITH (continuous) AS SELECT label, sum(n) AS n FROM ev_join GROUP BY 1;
INSERT INTO ev SELECT i % 10, '2024-01-01'::timestamptz + i * interval '13 seconds', i % 7 FROM generate_series(1, 1000) i;
INSERT INTO ev SELECT i % 12, '2024-01-01'::timestamptz + i * interval '13 seconds', i % 11 FROM generate_series(1, 10) i;
INSERT INTO ev VALUES (NULL, '2024-01-01', 1000), (3, '2024-01-01', NULL);
SELECT stream_ext.compact('ev_distinct') > 0 AS compacted;
INSERT INTO ev SELECT i % 5, '2024-01-01'::timestamptz + i * interval '1 second', 100 + i % 3 FROM generate_series(1, 30) i;
SELECT (SELECT count(*) FROM ((TABLE ev_distinct_up EXCEPT ALL SELECT k % 2, count(*), count(DISTINCT v) FROM ev GROUP BY 1)
                              UNION ALL (SELECT k % 2, count(*), count(DISTINCT v) FROM ev GROUP BY 1 EXCEPT ALL TABLE ev_distinct_up)) d) AS distinct_differing,
       (SELECT (n, dv) = (SELECT count(*), count(DISTINCT v) FROM ev) FROM ev_distinct_all) AS distinct_of_distinct_equal,
       (SELECT n = (SELECT count(*) FROM ev) AND round(a, 8) = (SELECT round(avg(v), 8) FROM ev) FROM ev_total_up) AS keyless_equal,
       (SELECT count(*) FROM ((TABLE ev_tumble_up EXCEPT ALL SELECT date_trunc('hour', ts), count(*) FROM ev GROUP BY 1)
                              UNION ALL (SELECT date_trunc('hour', ts), count(*) FROM ev GROUP BY 1 EXCEPT ALL TABLE ev_tumble_up)) d) AS tumble_differing,
       (SELECT count(*) FROM ((TABLE ev_join_up EXCEPT ALL SELECT d.label, count(*) FROM ev e JOIN dim d USING (k) GROUP BY 1)
                              UNION ALL (SELECT d.label, count(*) FROM ev e JOIN dim d USING (k) GROUP BY 1 EXCEPT ALL TABLE ev_join_up)) d) AS join_differing;

-- a count(DISTINCT) roll-up created over history: backfilled from the
-- upstream's side table, then fed by its inserts
CREATE VIEW ev_distinct_late WITH (continuous) AS
  SELECT k % 3 AS t, stream_ext.combine(dv) AS dv FROM ev_distinct GROUP BY 1;
SELECT count(*) AS late_differing_after_backfill FROM (
  (TABLE ev_distinct_late EXCEPT ALL SELECT k % 3, count(DISTINCT v) FROM ev GROUP BY 1)
  UNION ALL (SELECT k % 3, count(DISTINCT v) FROM ev GROUP BY 1 EXCEPT ALL TABLE ev_distinct_late)) d;
INSERT INTO ev SELECT i % 9, '2024-01-01'::timestamptz + i * interval '1 second', 200 + i % 4 FROM generate_series(1, 40) i;
SELECT count(*) AS late_differing_after_batch FROM (
  (TABLE ev_distinct_late EXCEPT ALL SELECT k % 3, count(DISTINCT v) FROM ev GROUP BY 1)
  UNION ALL (SELECT k % 3, count(DISTINCT v) FROM ev GROUP BY 1 EXCEPT ALL TABLE ev_distinct_late)) d;

-- the exact distinct count example of the docs
SELECT stream_ext.create_stream('rollup.page_views', 'page_id int, user_id bigint, ts timestamptz');
CREATE VIEW users_per_minute WITH (continuous) AS
  SELECT page_id, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, count(DISTINCT user_id) AS users
    FROM page_views GROUP BY 1, 2;
CREATE VIEW users_per_day WITH (continuous) AS
  SELECT page_id, date_bin('1 day', minute, '2000-01-01') AS day,
         sum(hits) AS hits, stream_ext.combine(users) AS users
    FROM users_per_minute GROUP BY 1, 2;
INSERT INTO page_views SELECT g % 3, g % 97, '2024-01-01'::timestamptz + g * interval '37 seconds' FROM generate_series(1, 5000) g;
SELECT page_id, day, hits, users,
       users = (SELECT count(DISTINCT user_id) FROM page_views p
                 WHERE p.page_id = d.page_id AND date_bin('1 day', p.ts, '2000-01-01') = d.day) AS exact
  FROM users_per_day d ORDER BY 1, 2;

-- what cannot be maintained from partial states is refused at CREATE
\set VERBOSITY default
CREATE VIEW bad WITH (continuous) AS SELECT url, count(*) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, avg(avg_latency) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, sum(avg_latency) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, max(hits) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, max(minute) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, sum(DISTINCT hits) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT sum(dv) FROM ev_distinct;
CREATE VIEW bad WITH (continuous) AS SELECT hits, count(*) FROM clicks_per_minute GROUP BY hits;
CREATE VIEW bad WITH (continuous) AS SELECT url, sum(hits) FROM clicks_per_minute WHERE hits > 3 GROUP BY url;
CREATE VIEW bad WITH (continuous) AS SELECT url, sum(hits) * 2 FROM clicks_per_minute GROUP BY url, hits;
CREATE VIEW bad WITH (continuous) AS
  SELECT c.url, sum(c.hits) FROM clicks_per_minute c JOIN clicks_per_hour h USING (url) GROUP BY 1;
CREATE VIEW bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT url, sum(hits) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous, backfill = 'kafka') AS
  SELECT url, sum(hits) FROM clicks_per_minute GROUP BY url;
CREATE VIEW bad WITH (continuous, backfill_from = '2020-01-01') AS
  SELECT url, sum(hits) FROM clicks_per_minute GROUP BY url;
-- backfill = 'none': from the upstream's next batch on
CREATE VIEW rollup_none WITH (continuous, backfill = 'none') AS
  SELECT url, sum(hits) AS hits FROM clicks_per_minute GROUP BY url;
SELECT count(*) AS rows_before_next_batch FROM rollup_none;
DROP VIEW rollup_none;
CREATE VIEW bad WITH (continuous) AS SELECT url, minute FROM clicks_per_minute;
CREATE OR REPLACE VIEW clicks_per_day WITH (continuous) AS
  SELECT date_bin('1 day', hour, '2000-01-01') AS day, sum(hits) AS hits FROM clicks_per_hour GROUP BY 1;
CREATE OR REPLACE VIEW clicks_per_minute WITH (continuous) AS
  SELECT url, count(*) AS hits FROM clicks GROUP BY url;
-- an upstream that upserts (session windows) has no batches to give
CREATE VIEW sessions WITH (continuous, session_gap = '5 minutes', time_column = 'ts') AS
  SELECT user_id, count(*) AS hits FROM clicks GROUP BY user_id;
CREATE VIEW bad WITH (continuous) AS SELECT sum(hits) FROM sessions;
-- a view with HAVING hides groups when read
CREATE VIEW having_v WITH (continuous) AS
  SELECT url, count(*) AS hits FROM clicks GROUP BY url HAVING count(*) > 10;
CREATE VIEW bad WITH (continuous) AS SELECT sum(hits) FROM having_v;
\set VERBOSITY terse

-- DROP: the upstream needs CASCADE, which takes the roll-ups along
DROP VIEW clicks_per_hour;
DROP VIEW clicks_per_minute CASCADE;
SELECT c.relname AS views_left FROM stream_ext.view_catalog v JOIN pg_class c ON c.oid = v.view
 WHERE c.relnamespace = 'rollup'::regnamespace ORDER BY 1;
SELECT tgrelid::regclass AS rollup_triggers_left FROM pg_trigger
 WHERE tgfoid = 'stream_ext.maintain_rollup'::regproc AND tgrelid::regclass::text LIKE '%ev\_%' IS NOT TRUE;
INSERT INTO clicks VALUES ('/after-drop', 1, now(), 1);

SET client_min_messages = warning;
DROP SCHEMA rollup CASCADE;
RESET client_min_messages;

-- Observability: stream_ext.view_stats, stream_ext.stream_stats,
-- stream_ext.explain(), column descriptions for psql's \d+.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('obs_clicks', 'url text, user_id int, ts timestamptz');
CREATE VIEW obs_per_url WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, 'epoch') AS minute,
         count(*) AS n, avg(user_id) AS avg_user, count(DISTINCT user_id) AS users
    FROM obs_clicks GROUP BY 1, 2;
CREATE VIEW obs_total WITH (continuous) AS
  SELECT count(*) AS n FROM obs_clicks;

-- nothing applied yet: zero counters, no times
SELECT view, stream, rows_in, batches, groups_updated, groups,
       last_batch_rows, last_maintained_at IS NULL AS never, freshness IS NULL AS no_freshness
  FROM stream_ext.view_stats WHERE view::text LIKE 'obs%' ORDER BY view::text;

-- three committed batches: 1000 rows, 1 row, 2 rows
INSERT INTO obs_clicks SELECT 'u' || (i % 10), i, '2026-01-01 00:00:00+00' FROM generate_series(1, 1000) i;
INSERT INTO obs_clicks VALUES ('u0', 1, '2026-01-01 00:01:00+00');
INSERT INTO obs_clicks VALUES ('u1', 1, '2026-01-01 00:01:00+00'), ('u2', 2, '2026-01-01 00:01:00+00');
-- a rolled-back batch and a rolled-back savepoint are not counted
BEGIN;
INSERT INTO obs_clicks SELECT 'x', i, now() FROM generate_series(1, 500) i;
ROLLBACK;
BEGIN;
INSERT INTO obs_clicks VALUES ('y', 1, '2026-01-01 00:02:00+00');
SAVEPOINT s1;
INSERT INTO obs_clicks SELECT 'z', i, now() FROM generate_series(1, 50) i;
ROLLBACK TO s1;
SAVEPOINT s2;
INSERT INTO obs_clicks VALUES ('y', 2, '2026-01-01 00:02:00+00');
RELEASE s2;
COMMIT;
-- an empty batch is not a batch
INSERT INTO obs_clicks SELECT 'w', 1, now() WHERE false;

-- 1000 + 1 + 2 + 1 + 1 rows in 5 batches; groups touched: 10 + 1 + 2 + 1 + 1
SELECT view, rows_in, batches, groups_updated, groups, last_batch_rows,
       last_maintained_at <= now() AS maintained, freshness >= '0'::interval AS fresh,
       max_event_time <= last_maintained_at AS event_before_commit,
       mean_maintenance_ms >= 0 AND max_maintenance_ms >= mean_maintenance_ms AS timed
  FROM stream_ext.view_stats WHERE view::text LIKE 'obs%' ORDER BY view::text;
-- groups is the exact number of groups the view holds
SELECT (SELECT count(*) FROM obs_per_url) AS per_url_groups,
       stream_ext.view_groups('obs_per_url') AS view_groups;

SELECT pg_stat_force_next_flush();
SELECT stream, views, rows_inserted, rows_stored, bytes > 0 AS has_bytes,
       last_maintained_at = (SELECT max(last_maintained_at) FROM stream_ext.view_stats
                              WHERE stream = 'obs_clicks'::regclass) AS last_of_views
  FROM stream_ext.stream_stats WHERE stream = 'obs_clicks'::regclass;

-- reset one view's counters
SELECT stream_ext.reset_stats('obs_total');
SELECT view, rows_in, batches FROM stream_ext.view_stats
 WHERE view::text LIKE 'obs%' ORDER BY view::text;
SELECT uncounted_batches, stats_reset <= now() AS has_reset_time FROM stream_ext.stats_info();

-- stats follow the user who may read the view: groups is NULL otherwise
CREATE ROLE obs_reader;
SET ROLE obs_reader;
SELECT view, rows_in, groups FROM stream_ext.view_stats
 WHERE view::text LIKE 'obs%' ORDER BY view::text;
SELECT stream_ext.reset_stats();                         -- not granted
SELECT count(*) FROM stream_ext.explain('obs_per_url');  -- may not read it
RESET ROLE;

-- explain: the maintenance plan, with partial aggregation and the upsert
SELECT line ~ '^Maintenance of public.obs_per_url: .* into public.obs_per_url_mrel$' AS header
  FROM stream_ext.explain('obs_per_url') AS line LIMIT 1;
SELECT count(*) FILTER (WHERE line ~ 'Partial (Hash|Group)Aggregate') AS partial_aggs,
       count(*) FILTER (WHERE line ~ 'Conflict Resolution: UPDATE') AS upserts,
       count(*) FILTER (WHERE line ~ '->  Insert on ') AS distinct_side_tables,
       count(*) FILTER (WHERE line ~ 'Named Tuplestore Scan') AS batch_scans
  FROM stream_ext.explain('obs_per_url', batch_rows => 10000) AS line;
SELECT count(*) FILTER (WHERE line ~ 'Output: ') > 0 AS verbose
  FROM stream_ext.explain('obs_total', verbose => true) AS line;
SELECT * FROM stream_ext.explain('obs_clicks');
SELECT * FROM stream_ext.explain('obs_per_url', batch_rows => 0);

-- \d+ describes every column
SELECT a.attname, col_description(a.attrelid, a.attnum)
  FROM pg_attribute a
 WHERE a.attrelid = 'obs_per_url'::regclass AND a.attnum > 0
 ORDER BY a.attnum;

-- dropped views leave view_stats
DROP VIEW obs_total;
SELECT view FROM stream_ext.view_stats WHERE view::text LIKE 'obs%' ORDER BY view::text;

DROP TABLE obs_clicks CASCADE;
DROP ROLE obs_reader;
